#pragma once
// The engine's implementations of the SDK contexts handed to operators.
#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "flowd/gpu.hpp"
#include "memory/device.hpp"
#include "runtime/carried.hpp"
#include "runtime/output_set.hpp"
#include "util/log.hpp"
#include "workflow/graph.hpp"

namespace flowd::runtime {

// A task's inputs as its variant sees them: host items for a CPU variant,
// device items for a GPU variant (TaskRunner::place, task_runner.hpp). Null for an
// unconnected optional port.
struct Inputs {
  std::string key;
  std::vector<const Item*> items;
};

template <class Base>
class ContextImpl : public Base {
public:
  ContextImpl(const workflow::StageNode& node, const Inputs* inputs, Logger& log, const std::atomic<bool>& stop)
      : node_(node), inputs_(inputs), log_(log), stop_(stop) {}

  const std::string& stage() const noexcept override { return node_.name; }
  const OperatorSpec& spec() const noexcept override { return node_.spec(); }
  Device device() const noexcept override { return Device::cpu; }
  bool cancelled() const noexcept override { return stop_.load(std::memory_order_relaxed); }
  void log(LogLevel level, std::string_view message) override {
    std::string prefix = "[" + node_.name + (inputs_ && !inputs_->key.empty() ? " " + inputs_->key : "") + "] ";
    log_.log(level, prefix + std::string(message));
  }
  const Item* find_input(std::size_t port) const noexcept override {
    if (!inputs_ || port >= inputs_->items.size()) return nullptr;
    return inputs_->items[port];
  }
  void simulate_compute(double seconds) override;

  // On a simulated GPU, modelled compute takes 1 / speedup of its time.
  void set_time_scale(double s) noexcept { time_scale_ = s; }

protected:
  const workflow::StageNode& node_;
  const Inputs* inputs_;
  Logger& log_;
  const std::atomic<bool>& stop_;
  double time_scale_ = 1.0;
};

// Why `value` may not enter input port `in` ("received <what> from <from> on
// input '<port>', which expects <type>"), or nothing when it may. One
// message wherever items are checked: routed here, pulled from another node,
// or handed to a worker node.
std::optional<std::string> input_mismatch(const PortSpec& in, const Value& value, std::string_view from = {});

// Collects emitted items after checking them against the output ports.
class Emitted {
public:
  void add(const workflow::StageNode& node, std::size_t port, Item item);
  // Throws if a required output port received nothing.
  void check_required(const workflow::StageNode& node) const;
  std::vector<std::pair<std::size_t, Item>>& items() noexcept { return items_; }

private:
  std::vector<std::pair<std::size_t, Item>> items_;
};

class MapContextImpl final : public ContextImpl<EmitContext> {
public:
  MapContextImpl(const workflow::StageNode& node, const Inputs* inputs, Logger& log, const std::atomic<bool>& stop,
                 SubTasks* sub = nullptr)
      : ContextImpl(node, inputs, log, stop), sub_(sub) {}
  void emit(std::size_t port, Item item) override { out.add(node_, port, std::move(item)); }
  SubTasks& subtasks() override { return sub_ ? *sub_ : EmitContext::subtasks(); }
  Emitted out;

private:
  SubTasks* sub_;
};

class GpuContextImpl final : public ContextImpl<GpuContext> {
public:
  GpuContextImpl(const workflow::StageNode& node, const Inputs* inputs, Logger& log, const std::atomic<bool>& stop,
                 memory::Device& dev)
      : ContextImpl(node, inputs, log, stop), dev_(dev) {}
  Device device() const noexcept override { return Device::gpu; }
  void emit(std::size_t port, Item item) override { out.add(node_, port, std::move(item)); }
  int gpu() const noexcept override { return dev_.ordinal(); }
  void* stream() const noexcept override { return dev_.compute_stream(); }
  Array allocate(DType dtype, std::span<const std::int64_t> shape) override { return dev_.allocate(dtype, shape); }
  Emitted out;

private:
  memory::Device& dev_;
};

class SourceContextImpl final : public ContextImpl<SourceContext> {
public:
  using ContextImpl::ContextImpl;
  void emit(std::size_t port, Item item) override { out.add(node_, port, std::move(item)); }
  void expect(std::uint64_t total) override { expected = total; }
  bool finished(std::string_view key) const override { return is_finished && is_finished(key); }
  void skip(std::string_view key) override {
    if (!finished(key))
      throw Error("stage '" + node_.name + "': skip('" + std::string(key) +
                  "') of an item no earlier run finished (SourceContext::finished says which)");
    skipped.emplace_back(key);
  }
  Emitted out;
  std::optional<std::uint64_t> expected;
  // A resumed run's journal: which of the source's items are finished.
  std::function<bool(std::string_view key)> is_finished;
  std::vector<std::string> skipped;  // what the source skipped this call
};

// A sink's files go through the run's OutputSet (output_set.hpp), which
// commits every sink's files together.
class SinkContextImpl final : public ContextImpl<SinkContext> {
public:
  SinkContextImpl(const workflow::StageNode& node, const Inputs* inputs, Logger& log, const std::atomic<bool>& stop,
                  const Json& provenance, OutputSet& outputs)
      : ContextImpl(node, inputs, log, stop), provenance_(provenance), outputs_(outputs) {}
  const Json& provenance() const noexcept override { return provenance_; }
  void output_folder(const std::filesystem::path& dir) override { outputs_.declare_folder(node_.name, dir); }
  void output_file(const std::filesystem::path& file) override { outputs_.declare_file(node_.name, file); }
  std::filesystem::path stage_output(const std::filesystem::path& target) override {
    return outputs_.stage(node_.name, target);
  }
  void write_output(const std::filesystem::path& target, std::span<const std::uint8_t> bytes) override {
    outputs_.write(node_.name, target, bytes);
  }
  std::filesystem::path scratch_file(const std::filesystem::path& near) override {
    return outputs_.scratch(node_.name, near);
  }
  void discard(const std::filesystem::path& temp) noexcept override { outputs_.discard(temp); }

private:
  const Json& provenance_;
  OutputSet& outputs_;
};

using ReduceContextImpl = ContextImpl<Context>;

// A scan's combine: the stage's other inputs by key, found (and placed where
// the combine runs) by `lookup`.
using ItemLookup = std::function<const Item&(std::size_t port, std::string_view key)>;

class ScanContextImpl final : public ContextImpl<ScanContext> {
public:
  ScanContextImpl(const workflow::StageNode& node, const Inputs* inputs, Logger& log, const std::atomic<bool>& stop,
                  ItemLookup lookup)
      : ContextImpl(node, inputs, log, stop), lookup_(std::move(lookup)) {}
  const Item& item(std::string_view port, std::string_view key) const override {
    return lookup_(input_port(port), key);
  }

private:
  ItemLookup lookup_;
};

class GpuScanContextImpl final : public ContextImpl<GpuScanContext> {
public:
  GpuScanContextImpl(const workflow::StageNode& node, const Inputs* inputs, Logger& log, const std::atomic<bool>& stop,
                     ItemLookup lookup, memory::Device& dev)
      : ContextImpl(node, inputs, log, stop), lookup_(std::move(lookup)), dev_(dev) {}
  Device device() const noexcept override { return Device::gpu; }
  const Item& item(std::string_view port, std::string_view key) const override {
    return lookup_(input_port(port), key);
  }
  int gpu() const noexcept override { return dev_.ordinal(); }
  void* stream() const noexcept override { return dev_.compute_stream(); }
  Array allocate(DType dtype, std::span<const std::int64_t> shape) override { return dev_.allocate(dtype, shape); }

private:
  ItemLookup lookup_;
  memory::Device& dev_;
};

// What an all-pairs operator's GPU variant sees (compare_gpu,
// preprocess_gpu): the GPU's stream and memory.
class GpuAllPairsContextImpl final : public ContextImpl<GpuAllPairsContext> {
public:
  GpuAllPairsContextImpl(const workflow::StageNode& node, const Inputs* inputs, Logger& log,
                         const std::atomic<bool>& stop, memory::Device& dev)
      : ContextImpl(node, inputs, log, stop), dev_(dev) {}
  Device device() const noexcept override { return Device::gpu; }
  int gpu() const noexcept override { return dev_.ordinal(); }
  void* stream() const noexcept override { return dev_.compute_stream(); }
  Array allocate(DType dtype, std::span<const std::int64_t> shape) override { return dev_.allocate(dtype, shape); }
  Array upload(const Array& host) override { return dev_.upload(host); }

private:
  memory::Device& dev_;
};

}  // namespace flowd::runtime
