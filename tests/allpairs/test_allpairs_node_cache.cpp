// A worker node's all-pairs cache as its peers see it (runtime/allpairs_job):
// what is served follows what the cache holds, a marker is served while an
// item loads, and a failed load takes its marker back.
#include <map>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "runtime/allpairs_job.hpp"

using namespace flowd;
using runtime::detail::AllPairsNodeCache;

namespace {

// What the node's item server would hold: name -> item.
struct Served {
  std::map<std::string, std::shared_ptr<const Item>> items;
  AllPairsNodeCache::Share share() {
    return [this](const std::string& name, std::shared_ptr<const Item> item) {
      if (item)
        items[name] = std::move(item);
      else
        items.erase(name);
    };
  }
  bool marker(const std::string& name) const {
    const auto it = items.find(name);
    return it != items.end() && runtime::detail::is_loading_marker(*it->second);
  }
  bool value(const std::string& name) const {
    const auto it = items.find(name);
    return it != items.end() && !runtime::detail::is_loading_marker(*it->second);
  }
};

Item value_of(int i) { return Item{ItemMeta{"item/" + std::to_string(i)}, Value(Json{{"i", i}})}; }

// Puts `key` in the cache as a lane would: load, publish, release.
void fill(sched::ItemCache<Item>& c, std::uint64_t key) {
  const auto lease = c.index.acquire(key);
  ASSERT_FALSE(lease.hit);
  c.data[lease.slot] = value_of(static_cast<int>(key));
  c.index.publish(lease.slot);
  c.index.release(lease.slot);
}

}  // namespace

TEST(AllPairsNodeCache, ServesWhatTheCacheHoldsAndAMarkerWhileLoading) {
  AllPairsNodeCache node;
  Served served;
  const auto share = served.share();
  auto& cache = node.get(2);
  EXPECT_EQ(&node.get(5), &cache);  // later jobs get the same cache
  EXPECT_EQ(cache.index.slots(), 2u);

  node.loading(1, "n1", share);
  EXPECT_TRUE(served.marker("n1"));
  fill(cache, 1);
  node.serve(1, "n1", value_of(1), share);
  EXPECT_TRUE(served.value("n1"));

  node.loading(2, "n2", share);
  fill(cache, 2);
  node.serve(2, "n2", value_of(2), share);
  // Item 3 evicts item 1 (least recently used): n1 is no longer served.
  node.loading(3, "n3", share);
  EXPECT_TRUE(served.marker("n3"));
  fill(cache, 3);
  node.serve(3, "n3", value_of(3), share);
  EXPECT_FALSE(served.items.contains("n1"));
  EXPECT_TRUE(served.value("n2"));
  EXPECT_TRUE(served.value("n3"));
  EXPECT_EQ(served.items.at("n3")->json()["i"], 3);

  // A marker stays while its item loads, whatever else is served meanwhile;
  // a failed load takes it back.
  node.loading(4, "n4", share);
  node.serve(2, "n2", value_of(2), share);
  EXPECT_TRUE(served.marker("n4"));
  node.abandon(4, "n4", share);
  EXPECT_FALSE(served.items.contains("n4"));
  node.abandon(4, "n4", share);  // twice: nothing more happens
  EXPECT_EQ(served.items.size(), 2u);
}

TEST(AllPairsNodeCache, WithoutAShareNothingIsServedAndNamesArePerStage) {
  AllPairsNodeCache node;
  node.get(2);
  node.loading(1, "n1", nullptr);
  node.serve(1, "n1", value_of(1), nullptr);
  node.abandon(1, "n1", nullptr);
  EXPECT_EQ(runtime::detail::peer_cache_name("compare", 7), "flowd.allpairs/compare/7");
  EXPECT_NE(runtime::detail::peer_cache_name("a", 7), runtime::detail::peer_cache_name("b", 7));
}
