#pragma once
// Operators: what a plugin implements. An operator derives from exactly one
// pattern base (Source, Map, Reduce, Scan, AllPairs, Sink); its static spec() declares name,
// ports and parameters; its constructor receives the validated parameters.
//
// Threading contract: Map::cpu may run concurrently on many items, so it must
// not mutate the operator (it is const). Source and Sink calls are made one
// at a time per stage. Reduce::merge is called concurrently on different
// accumulators. Scan::combine is called concurrently on different operands;
// AllPairs' load, preprocess, compare and postprocess concurrently on
// different items and pairs.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "flowd/item.hpp"
#include "flowd/param.hpp"
#include "flowd/port.hpp"

namespace flowd {

// How a stage relates items to tasks (docs/workflow-format.md, "Patterns";
// what each pattern base implements: docs/plugin-sdk.md, "Operators").
enum class Pattern : std::uint8_t { source, map, reduce, sink, scan, allpairs };
// Where a variant of an operator runs.
enum class Device : std::uint8_t { cpu, gpu };
enum class LogLevel : std::uint8_t { debug, info, warning, error };

constexpr std::string_view name_of(Pattern p) noexcept {
  constexpr std::string_view names[] = {"source", "map", "reduce", "sink", "scan", "allpairs"};
  return names[static_cast<int>(p)];
}
constexpr std::string_view name_of(Device d) noexcept { return d == Device::cpu ? "cpu" : "gpu"; }

struct OperatorSpec {
  std::string name{};  // "family.operation", unique across all plugins
  std::string doc{};
  std::vector<PortSpec> inputs{};
  std::vector<PortSpec> outputs{};
  std::vector<ParamSpec> params{};
  // Expected GPU speedup over one CPU core; seeds the performance model.
  std::optional<double> speedup_hint{};
  // Operators this one may run as fine-grained sub-tasks (see SubTasks):
  // opened and checked when the workflow is validated.
  std::vector<std::string> uses{};
  // Filled in by registration from the operator's base class and the
  // variants it implements; an author never writes these.
  Pattern pattern = Pattern::map;
  std::vector<Device> variants{};

  std::optional<std::size_t> input_index(std::string_view port) const noexcept { return index(inputs, port); }
  std::optional<std::size_t> output_index(std::string_view port) const noexcept { return index(outputs, port); }
  const ParamSpec* param(std::string_view n) const noexcept {
    for (const auto& p : params)
      if (p.name == n) return &p;
    return nullptr;
  }

private:
  static std::optional<std::size_t> index(const std::vector<PortSpec>& ports, std::string_view n) noexcept {
    for (std::size_t i = 0; i < ports.size(); ++i)
      if (ports[i].name == n) return i;
    return std::nullopt;
  }
};

// What the engine gives every call into an operator.
class Context {
public:
  virtual ~Context() = default;
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  virtual const std::string& stage() const noexcept = 0;  // the stage's name in the workflow
  virtual const OperatorSpec& spec() const noexcept = 0;
  virtual Device device() const noexcept = 0;              // the variant being run
  virtual bool cancelled() const noexcept = 0;             // long loops should poll this
  virtual void log(LogLevel level, std::string_view message) = 0;

  // Spends `seconds` of one core's computation without doing any: for
  // synthetic operators in scheduling experiments. It sleeps, so experiments
  // are not bound by the machine's cores; on a simulated GPU it sleeps
  // seconds / (the operator's estimated GPU speedup).
  virtual void simulate_compute(double seconds) = 0;

  // The item on an input port; nullptr for an unconnected optional input.
  virtual const Item* find_input(std::size_t port) const noexcept = 0;

  const Item& input(std::size_t port) const {
    if (const Item* it = find_input(port)) return *it;
    throw Error("stage '" + stage() + "': input port " + std::to_string(port) + " has no item");
  }
  const Item& input(std::string_view port) const { return input(input_port(port)); }
  bool has_input(std::string_view port) const { return find_input(input_port(port)) != nullptr; }
  // Metadata of the first input's item: what outputs inherit by default.
  const ItemMeta& meta() const { return input(0).meta; }

  void info(std::string_view m) { log(LogLevel::info, m); }
  void warn(std::string_view m) { log(LogLevel::warning, m); }

protected:
  Context() = default;

  std::size_t input_port(std::string_view port) const {
    if (auto i = spec().input_index(port)) return *i;
    throw Error("operator '" + spec().name + "' has no input port '" + std::string(port) + "'");
  }
  std::size_t output_port(std::string_view port) const {
    if (auto i = spec().output_index(port)) return *i;
    throw Error("operator '" + spec().name + "' has no output port '" + std::string(port) + "'");
  }
};

// An output of an earlier sub-task call, as the input of a later one: the
// call's index and the name of one of its operator's output ports
// (SubRef{pre, "markers"}). Names, because a port's index is an accident of
// the order its operator's spec lists them in.
struct SubRef {
  std::size_t call = 0;
  std::string port;
};
using SubInput = std::variant<Item, SubRef>;

// Fine-grained sub-tasks of a map task (Region Templates' two-level
// dataflow). Each call runs one operator from the spec's `uses` list on its
// inputs, as a task of its own through the same queue as every task, on the
// worker the policy picks and with that worker's variant (a GPU variant on a
// GPU); calls whose inputs are earlier calls' outputs wait for them, and those
// outputs stay where they were made (on a GPU, for a GPU consumer).
class SubTasks {
public:
  virtual ~SubTasks() = default;
  // Queues a call of `op` with `params` (validated like a stage's) on one
  // input per input port; returns its index. Throws flowd::Error for an
  // operator not in `uses`, bad parameters, or a SubRef to a call not made
  // yet or to an output port its operator does not declare.
  virtual std::size_t call(std::string_view op, const Json& params, std::vector<SubInput> inputs) = 0;
  // Returns when every call so far has run; the worker runs other ready tasks
  // meanwhile. Throws the first failure ("sub-task N (op) on key: what").
  virtual void wait() = 0;
  // What call `call` emitted on its output port `port` (the first item), in
  // host memory. Valid after wait().
  virtual const Item& result(std::size_t call, std::string_view port) = 0;
};

// Adds emission of items on output ports. An item emitted by a map task
// inherits the input's metadata unless the operator passes its own.
class EmitContext : public Context {
public:
  virtual void emit(std::size_t port, Item item) = 0;
  // This task's sub-tasks. Throws flowd::Error where there are none (sources,
  // GPU variants, sub-tasks themselves).
  virtual SubTasks& subtasks() { throw Error("stage '" + stage() + "': sub-tasks are not available here"); }

  void emit(std::string_view port, Item item) { emit(output_port(port), std::move(item)); }
  void emit(std::string_view port, Value value) { emit(output_port(port), Item{meta(), std::move(value)}); }
};

class SourceContext : public EmitContext {
public:
  // Total number of items this source will emit, when known (for progress).
  virtual void expect(std::uint64_t total_items) = 0;
  // A resumed run (--resume): whether an earlier run finished this source's
  // item `key` (its results are journalled; the engine would drop it). A
  // source that can tell an item's key before making it checks, and for a
  // finished one calls skip(key) instead of reading and emitting it, so a
  // resumed run does not read again what it will not use. Always false
  // outside a resumed run.
  virtual bool finished(std::string_view key) const = 0;
  // Counts finished item `key` as emitted and done without its value.
  // Throws flowd::Error when the item is not finished().
  virtual void skip(std::string_view key) = 0;
};

using MapContext = EmitContext;
using ReduceContext = Context;

// What a scan's combine sees. A combine has no current input (input() throws);
// it gets its operands as arguments and may read the items of the stage's
// other inputs by key: a registration's combine reads the frames behind its
// operands. The engine keeps those items where the combine runs.
class ScanContext : public Context {
public:
  // The item with key `key` that arrived on input `port` (not the series,
  // port 0). Throws flowd::Error naming the stage, port and key when there
  // is none.
  virtual const Item& item(std::string_view port, std::string_view key) const = 0;
};

// What an all-pairs operator's calls see: the stage's context (no current
// input: the item or pair is passed as arguments).
using AllPairsContext = Context;

// What a sink gets: the run's provenance and its output files. A sink
// declares in open() where it writes (a folder it fills, or single files),
// then writes each file under a temporary name the engine hands out. When
// the whole run has succeeded and every sink's commit() returned, the engine
// renames every sink's files into place together: all of them or, if one
// rename fails, none (what was there before is put back). A failed or
// interrupted run removes them. docs/plugin-sdk.md, "Writing a sink".
class SinkContext : public Context {
public:
  // Where results came from: workflow hash and text, flowd and plugin
  // versions, every stage's parameters. Sinks store it with their outputs.
  virtual const Json& provenance() const noexcept = 0;

  // Declares a folder whose files are all this sink's output (io.write_image's
  // `dir`) or one output file (io.write_hdf5's `path`); missing folders are
  // created, and removed again if the run writes nothing. Call from open():
  // the engine refuses, before any work, a run whose outputs would mix with
  // files an earlier run of flowd did not write (docs/cli.md, "Outputs").
  virtual void output_folder(const std::filesystem::path& dir) = 0;
  virtual void output_file(const std::filesystem::path& file) = 0;

  // A new, empty temporary file that becomes `target` when the run commits;
  // write it with any library. `target` must be a declared file or lie in a
  // declared folder (sub-folders are created). Staging a target again
  // discards its earlier temporary. Throws flowd::Error naming the target.
  virtual std::filesystem::path stage_output(const std::filesystem::path& target) = 0;
  // Stages `bytes` as the whole of `target`: written, flushed to disk and
  // checked. Throws flowd::Error ("writing 'out/a.png': No space left on
  // device") and leaves nothing behind.
  virtual void write_output(const std::filesystem::path& target, std::span<const std::uint8_t> bytes) = 0;
  // A temporary working file next to `near` that never becomes an output:
  // removed at the end of the run whatever happens, or by discard().
  virtual std::filesystem::path scratch_file(const std::filesystem::path& near) = 0;
  // Removes a temporary from stage_output() or scratch_file() now.
  virtual void discard(const std::filesystem::path& temp) noexcept = 0;
};

class Operator {
public:
  virtual ~Operator() = default;
};

// Produces items. next() is called repeatedly (one call at a time, when the
// pipeline has room) until it returns false.
class Source : public Operator {
public:
  virtual void open(SourceContext&) {}
  virtual bool next(SourceContext& ctx) = 0;
};

// One task per item (or per key-matched tuple of items when there are several
// inputs). May emit any number of items per output port; a port that is not
// optional must receive at least one.
class Map : public Operator {
public:
  virtual void cpu(MapContext& ctx) const = 0;
};

// An associative and commutative reduction of every item on its one input
// into one output item, as a monoid: each item is lifted into an
// accumulator, accumulators are merged in any grouping and order (partial
// accumulators are built in parallel), and the last one is finished.
class Reduce : public Operator {
public:
  virtual Item lift(ReduceContext&, const Item& in) const { return in; }
  virtual Item merge(ReduceContext& ctx, Item acc, const Item& other) const = 0;
  virtual Item finish(ReduceContext&, Item acc) const { return acc; }
};

// An inclusive prefix scan over the series on input port 0, ordered by item
// key in natural order (frame2 < frame10): y_i = x_0 ⊙ … ⊙ x_i, emitted on
// output port 0 keyed like x_i. combine(left, right) must be associative;
// it need not be commutative, and `left` always covers the earlier elements.
// The engine picks the order of evaluation by the stage's strategy
// (docs/workflow-format.md, "Scan stages"), so the same result must come
// from any grouping. shortcut() may answer a combine without work (e.g. when
// one operand is an identity); nullopt lets combine() run. The whole series
// is collected before the first combine. A GPU variant is declared like a
// map's (flowd/gpu.hpp): `Item combine_gpu(GpuScanContext&, const Item&,
// const Item&) const;`.
class Scan : public Operator {
public:
  virtual Item combine(ScanContext& ctx, const Item& left, const Item& right) const = 0;
  virtual std::optional<Item> shortcut(ScanContext&, const Item& left, const Item& right) const {
    (void)left;
    (void)right;
    return std::nullopt;
  }
};

// f(ℓ(a), ℓ(b)) for all pairs of one set (the items on input port 0, pairs
// a < b, optionally a = b too) or of two sets (port 0 × port 1), as Rocket
// computes them: ℓ = preprocess(load(item)) is expensive and cached, f =
// compare is cheap, so the engine orders the pairs so that each item is
// loaded and preprocessed about once (docs/plugin-sdk.md, "Writing an
// all-pairs operator"). The stage emits one table on its output port:
// columns a and b (the items' indices in key order; their keys are in the
// item's attrs "rows" and "cols") and one f64 column per score.
class AllPairs : public Operator {
public:
  // The names of the scores compare() fills, in order ("ncc", "pce").
  virtual std::vector<std::string> scores() const = 0;
  // ℓ, first half (CPU): the item as it arrived (a file's name, an image) →
  // what preprocess reads. The default passes it on.
  virtual Item load(AllPairsContext&, const Item& in) const { return in; }
  // ℓ, second half: the form compare() reads, which the engine caches.
  virtual Item preprocess(AllPairsContext&, Item loaded) const { return loaded; }
  // f: writes scores().size() values for the pair (a, b).
  virtual void compare(AllPairsContext& ctx, const Item& a, const Item& b, std::span<double> scores) const = 0;
  // Optional: rewrites a pair's scores after compare (e.g. a distance from a
  // similarity).
  virtual void postprocess(AllPairsContext&, std::span<double> scores) const { (void)scores; }
};

// Consumes items and writes results, through SinkContext's staged files.
// commit() is called when the whole run has succeeded: it completes the
// sink's staged files (closes them, writes what it kept back); the engine
// then moves every sink's files into place at once. abort() is called
// instead when the run failed or was interrupted: release what the sink
// holds (the engine removes the staged files).
class Sink : public Operator {
public:
  virtual void open(SinkContext&) {}
  virtual void consume(SinkContext& ctx) = 0;
  virtual void commit(SinkContext&) {}
  virtual void abort() noexcept {}
};

}  // namespace flowd
