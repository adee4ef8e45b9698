// Operators that fail the way careless plugin code does: throwing something
// that is not a std::exception, dereferencing null, aborting, overflowing the
// stack. Each misbehaves only on the item (or at the step) it is told, so a
// test sees the others go through. Not installed.
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <thread>
#include <unistd.h>

#include <flowd/flowd.hpp>

namespace {

using namespace flowd;

// What a plugin author might throw instead of a std::exception.
struct PluginOwnError {
  int code;
};

// Recurses until the stack is gone; the volatile buffer keeps each frame.
int overflow(int depth) {
  if (depth < 0) return 0;  // never: keeps the compiler from calling it infinite
  volatile char frame[1024];
  frame[0] = static_cast<char>(depth);
  return overflow(depth + 1) + frame[0];
}

// Misbehaves as `how` says: int, text, custom (a class of its own), segv,
// abort, overflow, or fpe (SIGFPE raised: integer division by zero is
// undefined behaviour the compiler may fold away).
[[noreturn]] void misbehave(const std::string& how) {
  if (how == "int") throw 42;
  if (how == "text") throw "plain text";
  if (how == "custom") throw PluginOwnError{7};
  if (how == "segv") {
    // An address in the never-mapped first page, not null itself: a real
    // SIGSEGV in every build, where UBSan would report a null store first.
    volatile std::uintptr_t address = 16;
    *reinterpret_cast<volatile int*>(address) = 1;
  }
  if (how == "overflow") std::exit(overflow(0));
  if (how == "fpe") std::raise(SIGFPE);
  std::abort();
}

std::vector<ParamSpec> how_params(std::string where_default) {
  return {ParamSpec::string("how", "int").doc("int, text, custom, segv, abort, overflow or fpe"),
          ParamSpec::string("where", std::move(where_default)).doc("which call misbehaves")};
}

// Passes items on; misbehaves on the item with key `key`, after `delay_ms`
// (so items before it are reported done first).
class Map_ final : public Map {
public:
  static OperatorSpec spec() {
    auto params = how_params("cpu");
    params.push_back(ParamSpec::string("key", "item/3").doc("the item it misbehaves on"));
    params.push_back(ParamSpec::integer("delay_ms", 0).at_least(0));
    return {.name = "faulty.map",
            .doc = "Identity that misbehaves on one item.",
            .inputs = {{"in", "any", ""}},
            .outputs = {{"out", "any", "the input"}},
            .params = std::move(params)};
  }
  explicit Map_(const Params& p)
      : how_(p.get<std::string>("how")), key_(p.get<std::string>("key")), delay_ms_(p.get<std::int64_t>("delay_ms")) {}
  void cpu(MapContext& ctx) const override {
    const Item& in = ctx.input(0);
    if (in.meta.key == key_) {
      std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms_));
      misbehave(how_);
    }
    ctx.emit("out", in);
  }

private:
  std::string how_, key_;
  std::int64_t delay_ms_;
};

// Emits `count` items "item/<i>"; misbehaves in open or in next at item `at`.
class Source_ final : public Source {
public:
  static OperatorSpec spec() {
    auto params = how_params("next");
    params.push_back(ParamSpec::integer("count", 6).at_least(0));
    params.push_back(ParamSpec::integer("at", 2).at_least(0));
    return {.name = "faulty.source",
            .doc = "Emits items; misbehaves at one.",
            .inputs = {},
            .outputs = {{"out", "json", ""}},
            .params = std::move(params)};
  }
  explicit Source_(const Params& p)
      : how_(p.get<std::string>("how")),
        where_(p.get<std::string>("where")),
        count_(p.get<std::int64_t>("count")),
        at_(p.get<std::int64_t>("at")) {}
  void open(SourceContext&) override {
    if (where_ == "open") misbehave(how_);
  }
  bool next(SourceContext& ctx) override {
    if (i_ >= count_) return false;
    const std::int64_t i = i_++;
    if (where_ == "next" && i == at_) misbehave(how_);
    Item item;
    item.meta.key = "item/" + std::to_string(i);
    item.value = Json{{"i", i}};
    ctx.emit("out", std::move(item));
    return i_ < count_;
  }

private:
  std::string how_, where_;
  std::int64_t count_, at_, i_ = 0;
};

// A sink that misbehaves in open, consume (of item `key`) or commit.
class Sink_ final : public Sink {
public:
  static OperatorSpec spec() {
    auto params = how_params("consume");
    params.push_back(ParamSpec::string("key", "item/3"));
    return {.name = "faulty.sink",
            .doc = "Consumes items; misbehaves at one step.",
            .inputs = {{"in", "any", ""}},
            .outputs = {},
            .params = std::move(params)};
  }
  explicit Sink_(const Params& p)
      : how_(p.get<std::string>("how")), where_(p.get<std::string>("where")), key_(p.get<std::string>("key")) {}
  void open(SinkContext&) override {
    if (where_ == "open") misbehave(how_);
  }
  void consume(SinkContext& ctx) override {
    if (where_ == "consume" && ctx.input(0).meta.key == key_) misbehave(how_);
  }
  void commit(SinkContext&) override {
    if (where_ == "commit") misbehave(how_);
  }
  void abort() noexcept override {}

private:
  std::string how_, where_, key_;
};

// Counts its items; misbehaves in lift (of item `key`), merge or finish.
class Reduce_ final : public Reduce {
public:
  static OperatorSpec spec() {
    auto params = how_params("lift");
    params.push_back(ParamSpec::string("key", "item/3"));
    return {.name = "faulty.reduce",
            .doc = "Counts items; misbehaves at one step.",
            .inputs = {{"in", "any", ""}},
            .outputs = {{"out", "json", "{\"n\": count}"}},
            .params = std::move(params)};
  }
  explicit Reduce_(const Params& p)
      : how_(p.get<std::string>("how")), where_(p.get<std::string>("where")), key_(p.get<std::string>("key")) {}
  Item lift(ReduceContext&, const Item& in) const override {
    if (where_ == "lift" && in.meta.key == key_) misbehave(how_);
    return Item{{}, Value(Json{{"n", 1}})};
  }
  Item merge(ReduceContext&, Item acc, const Item& other) const override {
    if (where_ == "merge") misbehave(how_);
    auto& j = std::get<Json>(acc.value);
    j["n"] = j["n"].get<std::int64_t>() + other.json()["n"].get<std::int64_t>();
    return acc;
  }
  Item finish(ReduceContext&, Item acc) const override {
    if (where_ == "finish") misbehave(how_);
    return acc;
  }

private:
  std::string how_, where_, key_;
};

}  // namespace

FLOWD_PLUGIN("faulty", "0.1.0", "Operators that throw non-standard exceptions or crash, for failure tests", Map_,
             Source_, Sink_, Reduce_)
