// Wire version 2 pinned down: the bytes of every message kind, encoded from
// fixed values, and the decoder's verdict (code and reason, or a hash of
// what it decoded) on every truncation and several one-byte mutations of
// each body. The codec's code may be reorganised freely; what it puts on
// the wire and why it refuses a peer's bytes may not change within a
// version, and round trips alone cannot show that (an encoder and a decoder
// can change in step).
//
// golden_v2.txt is only ever regenerated for a new wire version (version 2
// added task_failed's unreachable holders and holder_lost; the frames of
// every other message but the version field are version 1's):
//   FLOWD_WIRE_GOLDEN_UPDATE=1 bin/test_wire --gtest_filter='WireGolden.*'
// On a mismatch the verdicts are written under test-tmp/wire-golden/, to be
// diffed against the same files from a build of the last good commit.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "wire/codec.hpp"
#include "wire/wire.hpp"
#include "wire_helpers.hpp"

namespace {

using namespace flowd;
using namespace flowd::wire;
using flowd::wire::testing::copy;
using flowd::wire::testing::Frames;
using flowd::wire::testing::reseal;

namespace fs = std::filesystem;

const fs::path golden_file = fs::path(FLOWD_SOURCE_DIR) / "tests" / "wire" / "golden_v2.txt";

struct Case {
  std::string name;
  Frames frames;
};

OutMessage must(Result<OutMessage> r) {
  if (!r) throw std::runtime_error(r.error().describe());
  return std::move(r).value();
}

ItemMeta meta(std::string key, std::optional<Box> bbox, std::optional<Box> core, Json attrs) {
  ItemMeta m;
  m.key = std::move(key);
  m.version = 3;
  m.timestamp = -17;
  m.bbox = bbox;
  m.core = core;
  m.attrs = std::move(attrs);
  return m;
}

std::vector<Case> cases() {
  std::vector<Case> out;
  const auto control = [&](std::string name, const Body& b) {
    out.push_back({std::move(name), copy(must(encode(42, b)))});
  };
  const auto item = [&](std::string name, const Item& it, std::uint64_t chunk_bytes, std::uint32_t inline_chunks) {
    EncodeOptions opt;
    opt.chunk_bytes = chunk_bytes;
    opt.inline_chunks = inline_chunks;
    auto o = OutgoingItem::make(it, 77, opt);
    if (!o) throw std::runtime_error(o.error().describe());
    out.push_back({name, copy(must(o->descriptor(5)))});
    for (std::uint32_t i = o->inline_chunks(); i < o->chunk_count(); ++i)
      out.push_back({name + "-chunk" + std::to_string(i), copy(must(o->chunk(i, 6 + i)))});
  };

  const ItemRef ref{{"slide/tile/1/2", 2, 3}, 4, 5000};
  const ItemRef other{{"", -1, INT64_MAX}, 0, UINT64_MAX};
  const auto full = meta("slide3/tile/12/40", Box::make2d(1000, 2000, 512, 512), Box::make2d(1016, 2016, 480, 480),
                         {{"image", "a"}, {"image_shape", {40000, 30000}}, {"nested", {{"x", 1.5}, {"y", nullptr}}}});
  const auto core_only = meta("c", std::nullopt, Box{3, {1, 2, 3, 0}, {4, 5, 6, 0}}, Json::array({1, "two", true}));
  const auto bbox_only = meta("b", Box{1, {-5, 0, 0, 0}, {0, 0, 0, 0}}, std::nullopt, nullptr);

  control("hello", Hello{"host:123", "tcp://10.0.0.3:5601", 16, 2, {{"gpus", {"A100", "A100"}}, {"mem", 1.5}}});
  control("hello-empty", Hello{"", "", 0, 0, Json::object()});
  control("welcome", Welcome{7, 500, {{"workflow", {{"stages", Json::array()}}}, {"unicode", "é✓"}}});
  control("heartbeat", Heartbeat{3, 9});
  control("request_work", RequestWork{4, 1});
  control("assign_task", AssignTask{99, "segment", {ref, other}, {{"variant", "gpu"}}});
  control("assign_task-empty", AssignTask{0, "", {}, Json::object()});
  control(
      "task_done",
      TaskDone{99, 0.25, {TaskOutput{ref, 1, full}, TaskOutput{other, 0, ItemMeta{}}, TaskOutput{ref, 7, core_only}}});
  control("task_done-bbox", TaskDone{1, -0.0, {TaskOutput{ref, 2, bbox_only}}});
  control("task_failed", TaskFailed{99, true, "out of GPU memory", {}});
  control("task_failed-final", TaskFailed{100, false, "", {}});
  control("task_failed-unreachable", TaskFailed{101, true, "no answer", {2, 7}});
  FetchItem fi;  // field by field: GCC 12 misreports the nested aggregate as uninitialised
  fi.transfer_id = 12;
  fi.id = ref.id;
  fi.chunks = {4, 7, 9};
  control("fetch_item", fi);
  fi.chunks.clear();
  control("fetch_item-whole", fi);
  control("ack", Ack{5, 12, 3});
  control("ack-message", Ack{6, 0, whole_message});
  control("nack", Nack{5, 12, whole_message, RejectCode::bad_checksum, "chunk 3"});
  control("nack-internal", Nack{1, 2, 3, RejectCode::internal, ""});
  control("directory_update", DirectoryUpdate{{{true, ref}, {false, other}}});
  control("steal_request", StealRequest{8, 3});
  control("steal_reply", StealReply{{1, 2, 3}});
  control("steal_reply-empty", StealReply{});
  control("release_items", ReleaseItems{{{"a", 1, 2}, {"b", 3, 4}}});
  control("bye", Bye{"run finished"});
  control("holder_lost", HolderLost{3, "tcp://10.0.0.3:5601", "lost (no message for 4 heartbeat periods)"});

  Array a = Array::zeros(DType::u16, {3, 4});
  for (int i = 0; i < 12; ++i)
    a.data<std::uint16_t>()[i] = static_cast<std::uint16_t>(i * 4099);
  item("array", Item{full, a}, 10, 2);
  Array f = Array::zeros(DType::f32, {2, 1, 3});
  for (int i = 0; i < 6; ++i)
    f.data<float>()[i] = static_cast<float>(i) / 3.f;
  item("array-3d", Item{core_only, f}, 1 << 20, 1);
  item("array-empty-extent", Item{ItemMeta{}, Array::zeros(DType::i64, {0, 4})}, 1 << 20, 1);
  item("array-null", Item{bbox_only, Array{}}, 1 << 20, 1);
  Table t;
  t.add_column<std::int32_t>("label") = {1, 2, 3};
  t.add_column<std::string>("name") = {"a", "", "bcd"};
  t.add_column<double>("area") = {1.5, -2, 1e300};
  t.add_column<std::uint8_t>("flag") = {0, 1, 255};
  t.add_column<float>("f") = {1.f, 2.f, 3.f};
  t.add_column<std::int64_t>("big") = {INT64_MIN, 0, INT64_MAX};
  item("table", Item{full, t}, 24, 1);
  item("table-empty", Item{ItemMeta{}, Table{}}, 1 << 20, 1);
  item("json", Item{bbox_only, Json{{"cells", 12}, {"list", {1, 2, 3}}}}, 8, 64);
  item("none", Item{full, std::monostate{}}, 1 << 20, 1);
  return out;
}

std::string hex(std::span<const std::byte> b) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string s;
  s.reserve(2 * b.size());
  for (const auto x : b) {
    s += digits[std::to_integer<unsigned>(x) >> 4];
    s += digits[std::to_integer<unsigned>(x) & 15];
  }
  return s;
}

// What decode() makes of `f`: the rejection, or a hash of the header frame
// that what it decoded encodes to (so a field read into the wrong place
// shows even when the input is accepted).
std::string verdict(const Frames& f) {
  const auto views = f.views();
  auto m = decode(views);
  if (!m) return std::string(to_string(m.error().code)) + " " + m.error().reason;
  bool overflow = false;
  const auto again = detail::header_frame(m->header.seq, m->body, m->header.payload_frames, overflow);
  return "ok " + detail::hex(xxh64(std::span<const std::byte>(*again)));
}

// The verdicts on every proper prefix of the body (with body_bytes and the
// checksum fixed up, so the body parser sees it) and on each body byte
// replaced by a few values that hit lengths, counts, flags and enums.
std::vector<std::string> verdicts(const Case& c) {
  std::vector<std::string> out;
  const auto& header = c.frames.owned[0];
  const std::size_t body = header.size() - header_prefix_bytes;
  for (std::size_t n = 0; n < body; ++n) {
    Frames f = c.frames;
    f.owned[0].resize(header_prefix_bytes + n);
    const auto len = static_cast<std::uint32_t>(n);
    std::memcpy(f.owned[0].data() + 16, &len, 4);
    reseal(f.owned[0]);
    out.push_back("cut " + std::to_string(n) + ": " + verdict(f));
  }
  for (std::size_t i = 0; i < body; ++i) {
    const auto was = std::to_integer<unsigned>(header[header_prefix_bytes + i]);
    for (const unsigned v : {was ^ 0x01u, was ^ 0x80u, 0xFFu, 0x00u}) {
      if (v == was) continue;
      Frames f = c.frames;
      f.owned[0][header_prefix_bytes + i] = static_cast<std::byte>(v);
      reseal(f.owned[0]);
      out.push_back("byte " + std::to_string(i) + "=" + std::to_string(v) + ": " + verdict(f));
    }
  }
  return out;
}

std::vector<std::string> golden_lines() {
  std::vector<std::string> lines;
  for (const auto& c : cases()) {
    for (std::size_t i = 0; i < c.frames.owned.size(); ++i)
      lines.push_back(c.name + " frame" + std::to_string(i) + " " + hex(c.frames.owned[i]));
    const auto v = verdicts(c);
    std::string all;
    for (const auto& s : v)
      all += s + "\n";
    lines.push_back(c.name + " verdicts " + std::to_string(v.size()) + " " +
                    detail::hex(xxh64(std::as_bytes(std::span(all.data(), all.size())))));
  }
  return lines;
}

TEST(WireGolden, BytesAndVerdictsMatchVersion2) {
  const auto actual = golden_lines();
  if (std::getenv("FLOWD_WIRE_GOLDEN_UPDATE")) {
    std::ofstream out(golden_file);
    out << "# Wire version 2: header/payload frames as hex, and a hash of the decoder's verdicts on\n"
           "# mutations of each body. Written by tests/wire/test_wire_golden.cpp; never edit by hand.\n";
    for (const auto& l : actual)
      out << l << "\n";
    ASSERT_TRUE(out.good()) << golden_file;
    GTEST_SKIP() << "rewrote " << golden_file;
  }
  std::ifstream in(golden_file);
  ASSERT_TRUE(in.good()) << golden_file;
  std::vector<std::string> expected;
  for (std::string l; std::getline(in, l);)
    if (!l.empty() && l[0] != '#') expected.push_back(l);
  EXPECT_EQ(actual.size(), expected.size());
  bool same = actual.size() == expected.size();
  for (std::size_t i = 0; i < std::min(actual.size(), expected.size()); ++i) {
    EXPECT_EQ(actual[i], expected[i]) << "line " << i;
    same = same && actual[i] == expected[i];
  }
  if (!same) {
    const fs::path dir = fs::path(FLOWD_TEST_TMP) / "wire-golden";
    fs::create_directories(dir);
    for (const auto& c : cases()) {
      std::ofstream out(dir / (c.name + ".txt"));
      for (const auto& s : verdicts(c))
        out << s << "\n";
    }
    ADD_FAILURE() << "verdicts written under " << dir;
  }
}

}  // namespace
