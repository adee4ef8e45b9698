// Operators for testing the engine: deterministic, observable and able to
// fail on demand. Not installed.
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>

#include <algorithm>
#include <cstdio>

#include <flowd/flowd.hpp>

namespace {

using namespace flowd;
using Clock = std::chrono::steady_clock;

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

// This thread's CPU time: work measured by it costs the same however many
// processes share the cores.
std::int64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// Appends one line atomically (O_APPEND), so concurrent tasks can share a file.
void append_line(const std::string& path, const std::string& line) {
  if (path.empty()) return;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0) throw Error("cannot open trace file " + path);
  const std::string l = line + "\n";
  [[maybe_unused]] auto n = ::write(fd, l.data(), l.size());
  ::close(fd);
}

// Emits `count` items keyed "<prefix>/<i>" (or in reverse), each carrying
// {"i": i} or, with bytes > 0, a u8 array of that size. Counts how many of its
// arrays are alive at once and writes the maximum to `alive_report` when the
// run is over (the operator is destroyed).
class Count final : public Source {
public:
  static OperatorSpec spec() {
    return {.name = "test.count",
            .doc = "Emits count items.",
            .inputs = {},
            .outputs = {{"out", "any", "items"}},
            .params = {ParamSpec::integer("count", 10).at_least(0), ParamSpec::string("prefix", "item"),
                       ParamSpec::integer("bytes", 0).at_least(0), ParamSpec::boolean("reverse", false),
                       ParamSpec::integer("fail_at", -1), ParamSpec::string("alive_report", ""),
                       ParamSpec::boolean("announce", true).doc("call expect(count)"),
                       ParamSpec::integer("slow_every", 0).at_least(0).doc("the 1st, (k+1)-th ... item: made slowly (bursts of k)"),
                       ParamSpec::integer("slow_ms", 0).at_least(0).doc("how slowly: milliseconds")}};
  }
  explicit Count(const Params& p)
      : count_(p.get<std::int64_t>("count")), bytes_(p.get<std::int64_t>("bytes")), fail_at_(p.get<std::int64_t>("fail_at")),
        reverse_(p.get<bool>("reverse")), announce_(p.get<bool>("announce")), prefix_(p.get<std::string>("prefix")),
        report_(p.get<std::string>("alive_report")), alive_(std::make_shared<Alive>()),
        slow_every_(p.get<std::int64_t>("slow_every")), slow_ms_(p.get<std::int64_t>("slow_ms")) {
    if (fail_at_ >= count_) throw ParamError("fail_at", "fail_at must be below count (" + std::to_string(count_) + ")");
  }
  ~Count() override {
    if (!report_.empty()) {
      std::ofstream(report_) << alive_->max.load() << "\n";
    }
  }
  void open(SourceContext& ctx) override {
    if (announce_) ctx.expect(static_cast<std::uint64_t>(count_));
  }
  bool next(SourceContext& ctx) override {
    if (i_ >= count_) return false;
    const std::int64_t i = reverse_ ? count_ - 1 - i_ : i_;
    if (slow_every_ > 0 && i_ % slow_every_ == 0) std::this_thread::sleep_for(std::chrono::milliseconds(slow_ms_));
    ++i_;
    if (i == fail_at_) throw ItemError(prefix_ + "/" + std::to_string(i), "test.count: failing at " + std::to_string(i) + " as asked");
    Item item;
    item.meta.key = prefix_ + "/" + std::to_string(i);
    item.meta.attrs["i"] = i;
    if (bytes_ > 0) {
      auto alive = alive_;
      const int now = ++alive->count;
      for (int m = alive->max.load(); now > m && !alive->max.compare_exchange_weak(m, now);) {
      }
      void* mem = ::operator new(static_cast<std::size_t>(bytes_));
      std::shared_ptr<void> owner(mem, [alive](void* q) {
        --alive->count;
        ::operator delete(q);
      });
      const std::int64_t shape[] = {bytes_};
      item.value = Array::adopt(owner, mem, DType::u8, shape);
    } else {
      item.value = Json{{"i", i}};
    }
    ctx.emit("out", std::move(item));
    return i_ < count_;
  }

private:
  struct Alive {
    std::atomic<int> count{0};
    std::atomic<int> max{0};
  };
  std::int64_t count_, bytes_, fail_at_;
  bool reverse_, announce_;
  std::string prefix_, report_;
  std::shared_ptr<Alive> alive_;
  std::int64_t i_ = 0;
  std::int64_t slow_every_ = 0, slow_ms_ = 0;
};

// Passes items through; can sleep, fail on a key, emit several or none, emit
// the wrong type, and record when it ran.
class Step final : public Map {
public:
  static OperatorSpec spec() {
    return {.name = "test.step",
            .doc = "Identity with knobs.",
            .inputs = {{"in", "any", "anything"}},
            .outputs = {{"out", "any", "the input"}},
            .params = {ParamSpec::integer("sleep_ms", 0).at_least(0), ParamSpec::string("fail_key", ""),
                       ParamSpec::integer("copies", 1).at_least(0), ParamSpec::string("trace", ""),
                       ParamSpec::integer("spin_us", 0).at_least(0),
                       ParamSpec::integer("cpu_us", 0).at_least(0).doc("work until this thread has used this much CPU: the same work however many processes share the cores"),
                       ParamSpec::integer("sleep_per_i_ms", 0).at_least(0).doc("sleep i times this more for {\"i\": i} (or attrs.i): uneven tasks"),
                       ParamSpec::integer("emit_bytes", 0).at_least(0).doc("emit a u8 array of this size instead of the input, with attrs.i = i"),
                       ParamSpec::integer("slow_from", -1).doc("items with i >= this sleep slow_ms more (a slow tail)"),
                       ParamSpec::integer("slow_ms", 0).at_least(0)}};
  }
  explicit Step(const Params& p)
      : sleep_ms_(p.get<std::int64_t>("sleep_ms")), spin_us_(p.get<std::int64_t>("spin_us")), cpu_us_(p.get<std::int64_t>("cpu_us")),
        sleep_per_i_ms_(p.get<std::int64_t>("sleep_per_i_ms")), emit_bytes_(p.get<std::int64_t>("emit_bytes")),
        slow_from_(p.get<std::int64_t>("slow_from")), slow_ms_(p.get<std::int64_t>("slow_ms")),
        copies_(p.get<std::int64_t>("copies")), fail_key_(p.get<std::string>("fail_key")),
        trace_(p.get<std::string>("trace")) {}
  void cpu(MapContext& ctx) const override {
    const Item& in = ctx.input(0);
    const std::int64_t t0 = now_ns();
    std::int64_t i = -1;
    if (const auto* j = std::get_if<Json>(&in.value); j && j->contains("i")) i = (*j)["i"].get<std::int64_t>();
    else if (in.meta.attrs.contains("i")) i = in.meta.attrs["i"].get<std::int64_t>();
    std::int64_t sleep = sleep_ms_;
    if (i >= 0) sleep += sleep_per_i_ms_ * i;
    if (slow_from_ >= 0 && i >= slow_from_) sleep += slow_ms_;
    if (sleep > 0) std::this_thread::sleep_for(std::chrono::milliseconds(sleep));
    if (spin_us_ > 0)
      for (const auto end = Clock::now() + std::chrono::microseconds(spin_us_); Clock::now() < end;) {
      }
    if (cpu_us_ > 0)
      for (const std::int64_t end = thread_cpu_ns() + cpu_us_ * 1000; thread_cpu_ns() < end;) {
      }
    if (!fail_key_.empty() && in.meta.key == fail_key_) throw Error("asked to fail on " + fail_key_);
    for (std::int64_t c = 0; c < copies_; ++c) {
      Item out = in;
      if (emit_bytes_ > 0) {
        Array a = Array::uninitialized(DType::u8, {emit_bytes_});
        auto* bytes = a.data<std::uint8_t>();
        for (std::int64_t b = 0; b < emit_bytes_; ++b) bytes[b] = static_cast<std::uint8_t>(b * 31 + i);
        out.value = std::move(a);
        if (i >= 0) out.meta.attrs["i"] = i;
      }
      if (copies_ > 1) out.meta.key += "/copy" + std::to_string(c);
      ctx.emit("out", std::move(out));
    }
    append_line(trace_, ctx.stage() + " " + in.meta.key + " " + std::to_string(t0) + " " + std::to_string(now_ns()));
  }

private:
  std::int64_t sleep_ms_, spin_us_, cpu_us_, sleep_per_i_ms_, emit_bytes_, slow_from_, slow_ms_, copies_;
  std::string fail_key_, trace_;
};

// Declares u8 arrays but emits JSON: the engine must catch it.
class Liar final : public Map {
public:
  static OperatorSpec spec() {
    return {.name = "test.liar", .doc = "Emits the wrong type.", .inputs = {{"in", "any", ""}},
            .outputs = {{"out", "array<u8,2>", ""}}, .params = {}};
  }
  explicit Liar(const Params&) {}
  void cpu(MapContext& ctx) const override { ctx.emit("out", Value(Json{{"not", "an array"}})); }
};

// Joins two inputs by key: {"a": a.i, "b": b.i}.
class Pair final : public Map {
public:
  static OperatorSpec spec() {
    return {.name = "test.pair", .doc = "Two inputs matched by key.",
            .inputs = {{"a", "json", ""}, {"b", "json", ""}, {"c", "json", "", true}},
            .outputs = {{"out", "json", ""}}, .params = {}};
  }
  explicit Pair(const Params&) {}
  void cpu(MapContext& ctx) const override {
    ctx.emit("out", Value(Json{{"a", ctx.input("a").json()["i"]}, {"b", ctx.input("b").json()["i"]},
                               {"c", ctx.has_input("c")}}));
  }
};

// Sums {"i": n} values.
class SumI final : public Reduce {
public:
  static OperatorSpec spec() {
    return {.name = "test.sum", .doc = "Sum of i.", .inputs = {{"in", "json", ""}}, .outputs = {{"out", "json", ""}},
            .params = {ParamSpec::integer("sleep_ms", 0).at_least(0)}};
  }
  explicit SumI(const Params& p) : sleep_ms_(p.get<std::int64_t>("sleep_ms")) {}
  Item lift(ReduceContext&, const Item& in) const override {
    return Item{{}, Value(Json{{"sum", in.json()["i"].get<std::int64_t>()}, {"n", 1}})};
  }
  Item merge(ReduceContext&, Item acc, const Item& other) const override {
    if (sleep_ms_ > 0) std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms_));
    auto& j = std::get<Json>(acc.value);
    j["sum"] = j["sum"].get<std::int64_t>() + other.json()["sum"].get<std::int64_t>();
    j["n"] = j["n"].get<std::int64_t>() + other.json()["n"].get<std::int64_t>();
    return acc;
  }

private:
  std::int64_t sleep_ms_;
};

// Records every consumed key (and JSON payload) and writes them, one per
// line, to `path` on commit: a minimal transactional sink. `fail_commit`
// fails its commit after `path` was staged.
class Record final : public Sink {
public:
  static OperatorSpec spec() {
    return {.name = "test.record", .doc = "Writes consumed keys on commit.", .inputs = {{"in", "any", ""}},
            .outputs = {},
            .params = {ParamSpec::string("path"), ParamSpec::boolean("fail_commit", false),
                       ParamSpec::string("fail_key", ""), ParamSpec::boolean("fail_open", false),
                       ParamSpec::boolean("rows", false).doc("a table: a line per row, not one per item")}};
  }
  explicit Record(const Params& p)
      : path_(p.get<std::string>("path")), fail_key_(p.get<std::string>("fail_key")),
        fail_commit_(p.get<bool>("fail_commit")), fail_open_(p.get<bool>("fail_open")), rows_(p.get<bool>("rows")) {}
  void open(SinkContext& ctx) override {
    if (fail_open_) throw Error("cannot open " + path_ + " (asked to fail)");
    ctx.output_file(path_);
  }
  void consume(SinkContext& ctx) override {
    const Item& in = ctx.input(0);
    if (!fail_key_.empty() && in.meta.key == fail_key_) throw Error("sink asked to fail on " + fail_key_);
    std::string line = in.meta.key;
    if (const auto* j = std::get_if<Json>(&in.value)) line += " " + j->dump();
    // With rows: a table's line per row, its columns joined by commas.
    if (const auto* t = std::get_if<Table>(&in.value); t && rows_) {
      for (std::size_t r = 0; r < t->rows(); ++r) {
        std::string row;
        for (const auto& c : t->columns())
          std::visit(
              [&](const auto& v) {
                std::ostringstream o;
                o << v[r];
                row += (row.empty() ? "" : ",") + o.str();
              },
              c.data);
        lines_.push_back(line + " " + row);
      }
      workflow_sha_ = ctx.provenance().value("workflow_sha256", "");
      return;
    }
    lines_.push_back(line);
    workflow_sha_ = ctx.provenance().value("workflow_sha256", "");
  }
  void commit(SinkContext& ctx) override {
    std::sort(lines_.begin(), lines_.end(), [](const std::string& a, const std::string& b) { return key_less(a, b); });
    std::string text;
    for (const auto& l : lines_) text += l + "\n";
    ctx.write_output(path_, std::span(reinterpret_cast<const std::uint8_t*>(text.data()), text.size()));
    if (fail_commit_) throw Error("commit refused (asked to fail)");
  }

private:
  std::string path_, fail_key_;
  bool fail_commit_, fail_open_, rows_;
  std::vector<std::string> lines_;
  std::string workflow_sha_;
};


// {"i": n} -> {"i": 2n}, spending `cost_ms` of simulated computation; its
// speedup hint makes simulated GPUs eligible for it.
class Double final : public Map {
public:
  static OperatorSpec spec() {
    return {.name = "test.double", .doc = "Doubles i.", .inputs = {{"in", "json", ""}}, .outputs = {{"out", "json", ""}},
            .params = {ParamSpec::number("cost_ms", 0).at_least(0)}, .speedup_hint = 8.0};
  }
  explicit Double(const Params& p) : cost_ms_(p.get<double>("cost_ms")) {}
  void cpu(MapContext& ctx) const override {
    if (cost_ms_ > 0) ctx.simulate_compute(cost_ms_ * 1e-3);
    ctx.emit("out", Value(Json{{"i", 2 * ctx.input(0).json()["i"].get<std::int64_t>()}}));
  }

private:
  double cost_ms_;
};

// A two-level task: runs `calls` sub-tasks of test.double on i, i+1, ... (or,
// with chain, each on the previous one's output) and emits the sum of their
// results (with chain, the last one's). Call `fail_call` runs test.step told
// to fail instead; `op` names the operator of every call (to test refusals),
// `bad_ref` makes the last call read a call that does not exist and
// `ref_port` names the output port chained calls read.
class Fanout final : public Map {
public:
  static OperatorSpec spec() {
    return {.name = "test.fanout", .doc = "Sub-tasks.", .inputs = {{"in", "json", ""}}, .outputs = {{"out", "json", ""}},
            .params = {ParamSpec::integer("calls", 4).at_least(1), ParamSpec::boolean("chain", false),
                       ParamSpec::integer("fail_call", -1), ParamSpec::string("op", "test.double"),
                       ParamSpec::number("cost_ms", 0).at_least(0), ParamSpec::boolean("bad_ref", false),
                       ParamSpec::string("ref_port", "out")},
            .uses = {"test.double", "test.step"}};
  }
  explicit Fanout(const Params& p)
      : calls_(p.get<std::int64_t>("calls")), fail_call_(p.get<std::int64_t>("fail_call")), chain_(p.get<bool>("chain")),
        bad_ref_(p.get<bool>("bad_ref")), op_(p.get<std::string>("op")), cost_ms_(p.get<double>("cost_ms")),
        ref_port_(p.get<std::string>("ref_port")) {}
  void cpu(MapContext& ctx) const override {
    const Item& in = ctx.input(0);
    const std::int64_t i = in.json()["i"].get<std::int64_t>();
    SubTasks& sub = ctx.subtasks();
    std::vector<std::size_t> calls;
    for (std::int64_t k = 0; k < calls_; ++k) {
      SubInput arg = Item{in.meta, Value(Json{{"i", i + k}})};
      std::get<Item>(arg).meta.key = in.meta.key + "/" + std::to_string(k);
      if (chain_ && k > 0) arg = SubRef{calls.back(), ref_port_};
      if (bad_ref_ && k == calls_ - 1) arg = SubRef{static_cast<std::size_t>(calls_ + 5), "out"};
      if (k == fail_call_)
        // The key the failing call sees: a chained call gets call 0's output.
        calls.push_back(sub.call("test.step", {{"fail_key", in.meta.key + "/" + std::to_string(chain_ ? 0 : k)}},
                                 {std::move(arg)}));
      else
        calls.push_back(sub.call(op_, op_ == "test.double" ? Json{{"cost_ms", cost_ms_}} : Json::object(), {std::move(arg)}));
    }
    sub.wait();
    std::int64_t total = 0;
    if (chain_) total = sub.result(calls.back(), "out").json()["i"].get<std::int64_t>();
    else
      for (std::size_t c : calls) total += sub.result(c, "out").json()["i"].get<std::int64_t>();
    ctx.emit("out", Value(Json{{"i", total}}));
  }

private:
  std::int64_t calls_, fail_call_;
  bool chain_, bad_ref_;
  std::string op_;
  double cost_ms_;
  std::string ref_port_;
};

// Passes its input on unchanged; its speedup hint makes simulated GPUs
// eligible for it (residency and transfer tests).
class Relay final : public Map {
public:
  static OperatorSpec spec() {
    return {.name = "test.relay", .doc = "Identity, GPU-eligible.", .inputs = {{"in", "any", ""}},
            .outputs = {{"out", "any", ""}}, .params = {}, .speedup_hint = 5.0};
  }
  explicit Relay(const Params&) {}
  void cpu(MapContext& ctx) const override { ctx.emit("out", ctx.input(0)); }
};

// {"i": i} -> a scan element covering [i, i]: a 2×2 matrix mod p and a
// string, for test.matmul2 and test.concat.
class Element final : public Map {
public:
  static OperatorSpec spec() {
    return {.name = "test.element",
            .doc = "A scan element for element i.",
            .inputs = {{"in", "json", ""}},
            .outputs = {{"out", "json", ""}},
            .params = {ParamSpec::integer("identity_every", 0)
                           .at_least(0)
                           .doc("every k-th element is the identity matrix (0: none)")}};
  }
  explicit Element(const Params& p) : identity_every_(p.get<std::int64_t>("identity_every")) {}
  void cpu(MapContext& ctx) const override {
    const std::int64_t i = ctx.input(0).json()["i"].get<std::int64_t>();
    Json m = Json::array({(i * 7 + 3) % 1009, (i * 5 + 1) % 1009, (i * 11 + 2) % 1009, (i * 13 + 4) % 1009});
    if (identity_every_ > 0 && i % identity_every_ == 0) m = Json::array({1, 0, 0, 1});
    ctx.emit("out", Value(Json{{"lo", i}, {"hi", i}, {"m", m}, {"s", std::to_string(i) + ","}}));
  }

private:
  std::int64_t identity_every_;
};

// What the two test scans share: operands must be adjacent ranges [lo, hi]
// (the engine must never combine out of order), an optional sleep, a failure
// on demand, and a check that the item of input "frames" keyed
// "<frames_prefix>/<hi>" is there for every right operand.
class TestScan : public Scan {
public:
  static std::vector<ParamSpec> params() {
    return {ParamSpec::integer("sleep_ms", 0).at_least(0),
            ParamSpec::integer("fail_at", -1).doc("fail a combine reaching element i"),
            ParamSpec::integer("crash_at", -1).doc("abort the process in a combine reaching element i"),
            ParamSpec::string("frames_prefix", "").doc("check ctx.item(\"frames\", prefix/hi) in every combine")};
  }
  explicit TestScan(const Params& p)
      : sleep_ms_(p.get<std::int64_t>("sleep_ms")),
        fail_at_(p.get<std::int64_t>("fail_at")),
        crash_at_(p.get<std::int64_t>("crash_at")),
        frames_prefix_(p.get<std::string>("frames_prefix")) {}

protected:
  // The checks; returns the merged range as JSON with lo and hi.
  Json join(ScanContext& ctx, const Json& l, const Json& r) const {
    const auto lo = l["lo"].get<std::int64_t>(), mid = l["hi"].get<std::int64_t>(), hi = r["hi"].get<std::int64_t>();
    if (mid + 1 != r["lo"].get<std::int64_t>())
      throw Error("combined [" + std::to_string(lo) + ", " + std::to_string(mid) + "] with [" + r["lo"].dump() + ", " +
                  std::to_string(hi) + "]: not adjacent");
    if (hi == fail_at_) throw Error("asked to fail at " + std::to_string(hi));
    if (hi == crash_at_) std::abort();
    if (!frames_prefix_.empty()) {
      const Item& f = ctx.item("frames", frames_prefix_ + "/" + std::to_string(hi));
      if (f.json()["i"].get<std::int64_t>() != hi) throw Error("frame " + std::to_string(hi) + " has the wrong i");
    }
    if (sleep_ms_ > 0) std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms_));
    return Json{{"lo", lo}, {"hi", hi}};
  }

private:
  std::int64_t sleep_ms_, fail_at_, crash_at_;
  std::string frames_prefix_;
};

std::vector<PortSpec> scan_inputs() {
  return {{"in", "json", "the series (test.element items)"}, {"frames", "json", "items read by key", true}};
}

// Products of 2×2 integer matrices modulo 1009, left to right: associative,
// not commutative. Shortcut: an identity operand.
class MatMul2 final : public TestScan {
public:
  static OperatorSpec spec() {
    return {.name = "test.matmul2",
            .doc = "Prefix products of 2x2 matrices mod 1009.",
            .inputs = scan_inputs(),
            .outputs = {{"out", "json", ""}},
            .params = params()};
  }
  using TestScan::TestScan;
  Item combine(ScanContext& ctx, const Item& left, const Item& right) const override {
    const Json& l = left.json();
    const Json& r = right.json();
    Json out = join(ctx, l, r);
    const auto a = [&](int k) { return l["m"][k].get<std::int64_t>(); };
    const auto b = [&](int k) { return r["m"][k].get<std::int64_t>(); };
    out["m"] = Json::array({(a(0) * b(0) + a(1) * b(2)) % 1009, (a(0) * b(1) + a(1) * b(3)) % 1009,
                            (a(2) * b(0) + a(3) * b(2)) % 1009, (a(2) * b(1) + a(3) * b(3)) % 1009});
    return Item{right.meta, Value(std::move(out))};
  }
  std::optional<Item> shortcut(ScanContext&, const Item& left, const Item& right) const override {
    const Json identity = Json::array({1, 0, 0, 1});
    const Json& l = left.json();
    const Json& r = right.json();
    if (l["m"] != identity && r["m"] != identity) return std::nullopt;
    if (l["hi"].get<std::int64_t>() + 1 != r["lo"].get<std::int64_t>()) return std::nullopt;  // combine() says why
    return Item{right.meta, Value(Json{{"lo", l["lo"]}, {"hi", r["hi"]}, {"m", l["m"] == identity ? r["m"] : l["m"]}})};
  }
};

// String concatenation, left to right.
class Concat final : public TestScan {
public:
  static OperatorSpec spec() {
    return {.name = "test.concat",
            .doc = "Prefix concatenations.",
            .inputs = scan_inputs(),
            .outputs = {{"out", "json", ""}},
            .params = params()};
  }
  using TestScan::TestScan;
  Item combine(ScanContext& ctx, const Item& left, const Item& right) const override {
    Json out = join(ctx, left.json(), right.json());
    out["s"] = left.json()["s"].get<std::string>() + right.json()["s"].get<std::string>();
    return Item{right.meta, Value(std::move(out))};
  }
};

// Two inputs fed consecutive pairs: {"first": i, "second": j}.
class Consecutive final : public Map {
public:
  static OperatorSpec spec() {
    return {.name = "test.consecutive",
            .doc = "Names the pair it got.",
            .inputs = {{"first", "json", ""}, {"second", "json", ""}},
            .outputs = {{"out", "json", ""}},
            .params = {}};
  }
  explicit Consecutive(const Params&) {}
  void cpu(MapContext& ctx) const override {
    ctx.emit("out", Item{ctx.input("second").meta, Value(Json{{"first", ctx.input("first").json()["i"]},
                                                              {"second", ctx.input("second").json()["i"]}})});
  }
};

}  // namespace

// All pairs of {"i": n} items: load keeps i (counted in the item), preprocess
// makes v = 10·i, compare gives v_a + v_b and v_a·v_b. Fails on demand in
// the load of item i or the compare of a pair with a = i.
class Pairs final : public AllPairs {
public:
  static OperatorSpec spec() {
    return {.name = "test.pairs",
            .doc = "All pairs of test.count items: sum and product of 10·i.",
            .inputs = {{"a", "json", "the set"}, {"b", "json", "a second set", true}},
            .outputs = {{"scores", "table", "a, b, sum, product"}},
            .params = {ParamSpec::integer("fail_load", -1), ParamSpec::integer("fail_compare", -1),
                       ParamSpec::integer("sleep_us", 0).at_least(0),
                       ParamSpec::integer("crash_load", -1).doc("abort the process loading item i, once"),
                       ParamSpec::string("crash_marker", "").doc("file made by the process that aborts")}};
  }
  explicit Pairs(const Params& p)
      : fail_load_(p.get<std::int64_t>("fail_load")), fail_compare_(p.get<std::int64_t>("fail_compare")),
        sleep_us_(p.get<std::int64_t>("sleep_us")), crash_load_(p.get<std::int64_t>("crash_load")),
        crash_marker_(p.get<std::string>("crash_marker")) {}
  std::vector<std::string> scores() const override { return {"sum", "product"}; }
  Item load(AllPairsContext&, const Item& in) const override {
    const auto i = in.json()["i"].get<std::int64_t>();
    if (i == fail_load_) throw Error("cannot load item " + std::to_string(i) + " (asked to fail)");
    // The first process to load it dies (a worker node lost mid-job); the
    // marker lets the others load it.
    if (i == crash_load_ && !crash_marker_.empty() && !std::filesystem::exists(crash_marker_)) {
      std::ofstream(crash_marker_) << "crashed\n";
      std::abort();
    }
    return Item{in.meta, Value(Json{{"i", i}})};
  }
  Item preprocess(AllPairsContext&, Item loaded) const override {
    const auto i = loaded.json()["i"].get<std::int64_t>();
    return Item{loaded.meta, Value(Json{{"i", i}, {"v", 10 * i}})};
  }
  void compare(AllPairsContext&, const Item& a, const Item& b, std::span<double> out) const override {
    if (a.json()["i"].get<std::int64_t>() == fail_compare_) throw Error("asked to fail");
    if (sleep_us_ > 0) std::this_thread::sleep_for(std::chrono::microseconds(sleep_us_));
    const double x = a.json()["v"].get<double>(), y = b.json()["v"].get<double>();
    out[0] = x + y;
    out[1] = x * y;
  }

private:
  std::int64_t fail_load_, fail_compare_, sleep_us_, crash_load_;
  std::string crash_marker_;
};

FLOWD_PLUGIN("testops", "1.2.3", "Operators for testing the engine", Count, Step, Liar, Pair, SumI, Record, Double,
             Fanout, Relay, Element, MatMul2, Concat, Consecutive, Pairs)
