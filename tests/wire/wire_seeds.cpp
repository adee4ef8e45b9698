// Writes the seed corpus of the wire fuzz test into the directory given
// (emptied first): one valid input per message type and per value kind, so
// libFuzzer starts from inputs that pass every check and mutates from there.
// Generated rather than committed, so the seeds follow the format version.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "wire/wire.hpp"
#include "wire_helpers.hpp"

using namespace flowd;
using namespace flowd::wire;

namespace {

int written = 0;

void write(const std::filesystem::path& dir, const std::string& name, const std::vector<OutMessage>& messages) {
  for (const bool reseal : {false, true}) {
    const auto bytes = testing::fuzz_input(messages, reseal);
    std::ofstream out(dir / (name + (reseal ? "-resealed" : "")), std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    ++written;
  }
}

OutMessage must(Result<OutMessage> r) {
  if (!r) {
    std::fprintf(stderr, "wire_seeds: %s\n", r.error().describe().c_str());
    std::exit(1);
  }
  return std::move(r).value();
}

void item(const std::filesystem::path& dir, const std::string& name, const Item& it, std::uint64_t chunk_bytes) {
  EncodeOptions opt;
  opt.chunk_bytes = chunk_bytes;
  opt.limits = testing::fuzz_limits();
  auto o = OutgoingItem::make(it, 5, opt);
  if (!o) {
    std::fprintf(stderr, "wire_seeds: %s\n", o.error().describe().c_str());
    std::exit(1);
  }
  std::vector<OutMessage> messages{must(o->descriptor(1))};
  for (std::uint32_t i = o->inline_chunks(); i < o->chunk_count(); ++i) messages.push_back(must(o->chunk(i, 2 + i)));
  write(dir, name, messages);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: wire_seeds DIR\n");
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);

  const ItemRef ref{{"slide/tile/1/2", 1, 0}, 2, 4096};
  const std::vector<Body> control = {
      Hello{"node:1", "tcp://127.0.0.1:5601", 8, 1, {{"gpus", {"sim"}}}},
      Welcome{1, 500, {{"workflow", {{"stages", Json::array()}}}}},
      Heartbeat{2, 3},
      RequestWork{4, 0},
      AssignTask{7, "segment", {ref}, {{"variant", "cpu"}}},
      TaskDone{7, 0.5, {TaskOutput{ref, 0, ItemMeta{"tile/1", 0, 0, {}, {}, Json::object()}}}},
      TaskFailed{7, true, "boom", {}},
      FetchItem{5, ref.id, {1, 2}},
      Ack{3, 5, 1},
      Nack{3, 5, 1, RejectCode::bad_checksum, "chunk 1"},
      DirectoryUpdate{{{true, ref}, {false, ref}}},
      StealRequest{2, 3},
      StealReply{{7, 8}},
      ReleaseItems{{ref.id}},
      Bye{"done"},
      HolderLost{2, "tcp://127.0.0.1:5601", "lost"},
  };
  for (const auto& b : control) write(dir, std::string(to_string(type_of(b))), {must(encode(1, b))});

  ItemMeta meta;
  meta.key = "slide/tile/1/2";
  meta.version = 1;
  meta.bbox = Box::make2d(0, 0, 8, 8);
  meta.core = Box::make2d(1, 1, 6, 6);
  meta.attrs = {{"image", "a"}};
  Array a = Array::zeros(DType::u16, {8, 8});
  for (int i = 0; i < 64; ++i) a.data<std::uint16_t>()[i] = static_cast<std::uint16_t>(i * 977);
  item(dir, "array", Item{meta, a}, 1 << 20);
  item(dir, "array-chunked", Item{meta, a}, 40);
  item(dir, "array-3d", Item{{}, Array::zeros(DType::f32, {2, 3, 4})}, 1 << 20);
  Table t;
  t.add_column<std::int32_t>("label") = {1, 2, 3};
  t.add_column<std::string>("name") = {"a", "bc", ""};
  t.add_column<double>("area") = {1.5, 2.5, 3.5};
  item(dir, "table", Item{meta, t}, 1 << 20);
  item(dir, "table-chunked", Item{meta, t}, 16);
  item(dir, "json", Item{meta, Json{{"cells", 12}, {"list", {1, 2, 3}}}}, 1 << 20);
  item(dir, "none", Item{meta, std::monostate{}}, 1 << 20);
  std::printf("wire_seeds: %d seeds in %s\n", written, dir.c_str());
  return 0;
}
