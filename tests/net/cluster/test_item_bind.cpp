// Where `flowd worker` serves its items without --bind (issue 18, item 1):
// loopback only when every node can be on this machine, else the address
// this host reaches the coordinator from.
#include <gtest/gtest.h>

#include <string>

#include "net/cluster/advertise.hpp"
#include "net/cluster/item_bind.hpp"

namespace cl = flowd::net::cluster;

namespace {

// An address of this machine that is up and not loopback, or "".
std::string own_address() {
  for (const auto& i : cl::ipv4_interfaces())
    if (i.up && !i.loopback && i.ipv4.rfind("169.254.", 0) != 0) return i.ipv4;
  return "";
}

}  // namespace

TEST(ItemBind, LoopbackForALocalCoordinatorOrWithoutKeys) {
  EXPECT_EQ(cl::default_item_bind("tcp://127.0.0.1:5555", true), "tcp://127.0.0.1:*");
  EXPECT_EQ(cl::default_item_bind("tcp://localhost:5555", true), "tcp://127.0.0.1:*");
  EXPECT_EQ(cl::default_item_bind("ipc:///tmp/flowd.sock", true), "tcp://127.0.0.1:*");
  // Without keys the endpoint policy allows nothing else.
  EXPECT_EQ(cl::default_item_bind("tcp://10.77.0.1:5555", false), "tcp://127.0.0.1:*");
}

TEST(ItemBind, TheAddressThisHostReachesARemoteCoordinatorFrom) {
  const std::string own = own_address();
  if (own.empty()) GTEST_SKIP() << "this machine has no non-loopback IPv4 interface that is up";
  // The route to one of our own addresses leaves from that address.
  EXPECT_EQ(cl::source_address_towards(own), own);
  EXPECT_EQ(cl::default_item_bind("tcp://" + own + ":5555", true), "tcp://" + own + ":*");
}

TEST(ItemBind, PeersOnThisMachine) {
  const std::vector<cl::Interface> ifs{{"lo", "127.0.0.1", true, true}, {"eth0", "10.77.0.2", true, false}};
  EXPECT_TRUE(cl::on_this_machine("127.0.0.1", ifs));
  EXPECT_TRUE(cl::on_this_machine("127.3.4.5", ifs));
  EXPECT_TRUE(cl::on_this_machine("10.77.0.2", ifs));
  EXPECT_TRUE(cl::on_this_machine("::ffff:10.77.0.2", ifs));
  EXPECT_FALSE(cl::on_this_machine("10.77.0.3", ifs));
  EXPECT_FALSE(cl::on_this_machine("::ffff:10.77.0.3", ifs));
}
