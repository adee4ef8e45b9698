// JournalCheckpoint: what a run kept and finished comes back after reopening,
// exactly once; sink inputs of unfinished source items are dropped and kept
// again by the epoch that finishes them; another workflow's journal, a
// journal that would be overwritten and a missing one are refused; a torn
// last journal line costs only its own record.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "flowd/error.hpp"
#include "store/checkpoint.hpp"

namespace {

namespace fs = std::filesystem;
using flowd::Array;
using flowd::Box;
using flowd::DType;
using flowd::Item;
using flowd::Json;
using flowd::store::Hdf5ItemStore;
using flowd::store::JournalCheckpoint;
using flowd::runtime::SourceRef;
using Replayed = std::vector<std::vector<std::optional<Item>>>;

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::path(FLOWD_TEST_TMP) / "checkpoint" / (name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  return dir;
}

Item json_item(const std::string& key, std::int64_t i) {
  Item it;
  it.meta.key = key;
  it.value = Json{{"i", i}};
  return it;
}

Item array_item(const std::string& key) {
  Item it;
  it.meta.key = key;
  it.meta.version = 2;
  it.meta.timestamp = -7;
  it.meta.bbox = Box::make2d(10, 20, 3, 4);
  it.meta.core = Box::make2d(11, 21, 1, 2);
  it.meta.attrs = Json{{"image", "a"}, {"image_shape", {30, 40}}};
  Array a = Array::uninitialized(DType::u16, {3, 4});
  auto* p = static_cast<unsigned char*>(a.raw());
  for (std::size_t i = 0; i < a.nbytes(); ++i) p[i] = static_cast<unsigned char>(i * 5 + 1);
  it.value = std::move(a);
  return it;
}

void expect_same(const Item& a, const Item& b) {
  EXPECT_EQ(a.meta.key, b.meta.key);
  EXPECT_EQ(a.meta.version, b.meta.version);
  EXPECT_EQ(a.meta.timestamp, b.meta.timestamp);
  EXPECT_EQ(a.meta.bbox, b.meta.bbox);
  EXPECT_EQ(a.meta.core, b.meta.core);
  EXPECT_EQ(a.meta.attrs, b.meta.attrs);
  ASSERT_EQ(flowd::kind_of(a.value), flowd::kind_of(b.value));
  if (const auto* x = std::get_if<Array>(&a.value)) {
    const Array& y = std::get<Array>(b.value);
    ASSERT_EQ(x->describe(), y.describe());
    EXPECT_EQ(std::memcmp(x->contiguous().raw(), y.contiguous().raw(), x->nbytes()), 0);
  } else if (const auto* j = std::get_if<Json>(&a.value)) {
    EXPECT_EQ(*j, std::get<Json>(b.value));
  }
}

// The keys of the first port of every replayed tuple, sorted.
std::vector<std::string> keys_of(const Replayed& r) {
  std::vector<std::string> k;
  for (const auto& t : r) k.push_back(t.at(0) ? t.at(0)->meta.key : "(none)");
  std::ranges::sort(k);
  return k;
}

void keep(JournalCheckpoint& cp, const std::string& sink, const Item& item, const std::string& source_key) {
  cp.keep_sink_input(sink, {&item}, {SourceRef{"src", source_key}});
}

std::string error_of(const fs::path& dir, const std::string& hash, bool resume) {
  try {
    JournalCheckpoint cp(dir, hash, resume);
  } catch (const flowd::Error& e) {
    return e.what();
  }
  return "";
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(JournalCheckpoint, KeptAndFinishedComeBackExactlyOnce) {
  const auto dir = fresh_dir("basic");
  const Item a = array_item("tile/0"), j = json_item("tile/1", 41), other = json_item("tile/0", 7);
  {
    JournalCheckpoint cp(dir, "sha-A", false);
    EXPECT_EQ(cp.epoch(), 1);
    EXPECT_FALSE(cp.finished("src", "tile/0"));
    EXPECT_TRUE(cp.replay("out").empty());
    // Two ports, the second unconnected; one source item feeds two sinks.
    cp.keep_sink_input("out", {&a, nullptr}, {SourceRef{"src", "tile/0"}});
    cp.keep_sink_input("out", {&j, nullptr}, {SourceRef{"src", "tile/1"}});
    cp.keep_sink_input("log", {&other}, {SourceRef{"src", "tile/0"}});
    cp.finish(SourceRef{"src", "tile/0"});
    cp.finish(SourceRef{"src", "tile/1"});
    // Finished in this epoch: still computed by this run, not skipped.
    EXPECT_FALSE(cp.finished("src", "tile/0"));
  }
  EXPECT_TRUE(fs::exists(dir / JournalCheckpoint::journal_file));
  EXPECT_TRUE(fs::exists(dir / JournalCheckpoint::store_file));
  for (int round = 0; round < 2; ++round) {  // a finished run resumes to the same replay, again and again
    JournalCheckpoint cp(dir, "sha-A", true);
    EXPECT_EQ(cp.epoch(), 2 + round);
    EXPECT_TRUE(cp.warnings().empty());
    EXPECT_TRUE(cp.finished("src", "tile/0"));
    EXPECT_TRUE(cp.finished("src", "tile/1"));
    EXPECT_FALSE(cp.finished("src", "tile/2"));
    EXPECT_FALSE(cp.finished("other", "tile/0"));
    EXPECT_EQ(cp.finished_count(), 2u);
    EXPECT_EQ(cp.replay_count(), 3u);
    EXPECT_EQ(cp.discarded_count(), 0u);
    auto out = cp.replay("out");
    ASSERT_EQ(out.size(), 2u);
    std::ranges::sort(out, [](const auto& x, const auto& y) { return x[0]->meta.key < y[0]->meta.key; });
    for (const auto& t : out) {
      ASSERT_EQ(t.size(), 2u);
      EXPECT_FALSE(t[1]);
    }
    expect_same(*out[0][0], a);
    expect_same(*out[1][0], j);
    const auto log = cp.replay("log");
    ASSERT_EQ(log.size(), 1u);
    expect_same(*log[0][0], other);
    EXPECT_TRUE(cp.replay("out").empty()) << "handed out once";
    EXPECT_TRUE(cp.replay("nosuch").empty());
  }
}

TEST(JournalCheckpoint, AnUnfinishedItemsInputIsDroppedAndKeptAgainOnce) {
  const auto dir = fresh_dir("unfinished");
  {
    JournalCheckpoint cp(dir, "sha-A", false);
    keep(cp, "out", json_item("a", 1), "a");
    keep(cp, "out", json_item("b", 2), "b");  // b's run crashes before b finishes
    keep(cp, "out", json_item("c", 3), "c");  // c never finishes in epoch 1 or 2
    // A join of a finished and an unfinished item is not finished either.
    const Item ab = json_item("a+b", 3);
    cp.keep_sink_input("out", {&ab}, {SourceRef{"src", "a"}, SourceRef{"src", "b"}});
    cp.finish(SourceRef{"src", "a"});
  }
  {
    JournalCheckpoint cp(dir, "sha-A", true);
    EXPECT_EQ(cp.epoch(), 2);
    EXPECT_TRUE(cp.finished("src", "a"));
    EXPECT_FALSE(cp.finished("src", "b"));
    EXPECT_EQ(cp.discarded_count(), 3u);
    EXPECT_EQ(keys_of(cp.replay("out")), (std::vector<std::string>{"a"}));
    keep(cp, "out", json_item("b", 20), "b");  // computed again, with another value
    cp.finish(SourceRef{"src", "b"});
    keep(cp, "out", json_item("c", 30), "c");  // crashes again
  }
  {
    JournalCheckpoint cp(dir, "sha-A", true);
    EXPECT_EQ(cp.epoch(), 3);
    EXPECT_EQ(cp.discarded_count(), 1u) << "c of epoch 2; epoch 1's were counted by the last open";
    EXPECT_TRUE(cp.finished("src", "b"));
    EXPECT_FALSE(cp.finished("src", "c"));
    const auto out = cp.replay("out");
    EXPECT_EQ(keys_of(out), (std::vector<std::string>{"a", "b"})) << "b once, from epoch 2";
    for (const auto& t : out)
      if (t[0]->meta.key == "b") {
        EXPECT_EQ(t[0]->json()["i"], 20);
      }
    keep(cp, "out", json_item("c", 300), "c");
    cp.finish(SourceRef{"src", "c"});
  }
  {
    JournalCheckpoint cp(dir, "sha-A", true);
    const auto out = cp.replay("out");
    EXPECT_EQ(keys_of(out), (std::vector<std::string>{"a", "b", "c"}));
    for (const auto& t : out)
      if (t[0]->meta.key == "c") {
        EXPECT_EQ(t[0]->json()["i"], 300);
      }
  }
  // The store holds only what is replayed: dropped inputs were erased.
  Hdf5ItemStore store(dir / JournalCheckpoint::store_file);
  EXPECT_EQ(store.size(), 3u);
}

TEST(JournalCheckpoint, ItemsWithoutARecordAreErasedAtOpen) {
  const auto dir = fresh_dir("orphan");
  {
    JournalCheckpoint cp(dir, "sha-A", false);
    keep(cp, "out", json_item("a", 1), "a");
    cp.finish(SourceRef{"src", "a"});
  }
  {
    // What a crash between storing an input and recording it leaves.
    Hdf5ItemStore store(dir / JournalCheckpoint::store_file);
    Item orphan = json_item("sink-input/1/99/0", 5);
    store.put(orphan);
    EXPECT_EQ(store.size(), 2u);
  }
  {
    JournalCheckpoint cp(dir, "sha-A", true);
    EXPECT_EQ(keys_of(cp.replay("out")), (std::vector<std::string>{"a"}));
  }
  Hdf5ItemStore store(dir / JournalCheckpoint::store_file);
  EXPECT_EQ(store.size(), 1u);
}

TEST(JournalCheckpoint, AnotherWorkflowsJournalIsRefused) {
  const auto dir = fresh_dir("hash");
  {
    JournalCheckpoint cp(dir, "sha-A", false);
    cp.finish(SourceRef{"src", "a"});
  }
  const std::string e = error_of(dir, "sha-B", true);
  EXPECT_NE(e.find((dir / JournalCheckpoint::journal_file).string()), std::string::npos) << e;
  EXPECT_NE(e.find("belongs to workflow sha-A"), std::string::npos) << e;
  EXPECT_EQ(error_of(dir, "sha-A", true), "") << "the same workflow resumes";
}

TEST(JournalCheckpoint, AnExistingJournalIsNeverOverwrittenAndAMissingOneNotResumed) {
  const auto dir = fresh_dir("exists");
  const std::string missing = error_of(dir, "sha-A", true);
  EXPECT_NE(missing.find((dir / JournalCheckpoint::journal_file).string()), std::string::npos) << missing;
  EXPECT_NE(missing.find("does not exist"), std::string::npos) << missing;
  {
    JournalCheckpoint cp(dir, "sha-A", false);
    keep(cp, "out", json_item("a", 1), "a");
    cp.finish(SourceRef{"src", "a"});
  }
  const std::string journal = slurp(dir / JournalCheckpoint::journal_file);
  const std::string e = error_of(dir, "sha-A", false);
  EXPECT_NE(e.find("use --resume to continue it, or remove " + dir.string()), std::string::npos) << e;
  EXPECT_NE(e.find((dir / JournalCheckpoint::journal_file).string()), std::string::npos) << e;
  EXPECT_EQ(slurp(dir / JournalCheckpoint::journal_file), journal) << "untouched";
  JournalCheckpoint cp(dir, "sha-A", true);
  EXPECT_EQ(cp.replay_count(), 1u);
  // One writer: a second open of the same directory fails while this one lives.
  const std::string busy = error_of(dir, "sha-A", true);
  EXPECT_NE(busy.find("in use"), std::string::npos) << busy;
}

TEST(JournalCheckpoint, ATornLastLineCostsOnlyItsRecord) {
  const auto dir = fresh_dir("torn");
  {
    JournalCheckpoint cp(dir, "sha-A", false);
    keep(cp, "out", json_item("a", 1), "a");
    cp.finish(SourceRef{"src", "a"});
    keep(cp, "out", json_item("b", 2), "b");
    cp.finish(SourceRef{"src", "b"});  // the line the crash tears
  }
  const fs::path journal = dir / JournalCheckpoint::journal_file;
  const std::string text = slurp(journal);
  fs::resize_file(journal, text.size() - 9);  // the newline and the end of the checksum
  {
    JournalCheckpoint cp(dir, "sha-A", true);
    ASSERT_EQ(cp.warnings().size(), 1u);
    EXPECT_NE(cp.warnings()[0].find("torn"), std::string::npos) << cp.warnings()[0];
    EXPECT_TRUE(cp.finished("src", "a"));
    EXPECT_FALSE(cp.finished("src", "b"));
    EXPECT_EQ(cp.discarded_count(), 1u);
    EXPECT_EQ(keys_of(cp.replay("out")), (std::vector<std::string>{"a"}));
    keep(cp, "out", json_item("b", 2), "b");
    cp.finish(SourceRef{"src", "b"});
  }
  JournalCheckpoint cp(dir, "sha-A", true);
  EXPECT_TRUE(cp.warnings().empty());
  EXPECT_EQ(keys_of(cp.replay("out")), (std::vector<std::string>{"a", "b"}));
}

TEST(JournalCheckpoint, ThreadsKeepAndFinishAtOnce) {
  const auto dir = fresh_dir("threads");
  constexpr int threads = 4, per_thread = 15;
  {
    JournalCheckpoint cp(dir, "sha-A", false);
    std::vector<std::jthread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&cp, t] {
        for (int i = 0; i < per_thread; ++i) {
          const std::string key = "t" + std::to_string(t) + "/" + std::to_string(i);
          keep(cp, "out", json_item(key, i), key);
          cp.finish(SourceRef{"src", key});
        }
      });
  }
  JournalCheckpoint cp(dir, "sha-A", true);
  EXPECT_EQ(cp.finished_count(), std::size_t{threads * per_thread});
  const auto out = cp.replay("out");
  EXPECT_EQ(out.size(), std::size_t{threads * per_thread});
  auto keys = keys_of(out);
  EXPECT_EQ(std::ranges::unique(keys).size(), 0u) << "no key twice";
}

}  // namespace
