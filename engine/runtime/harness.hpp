#pragma once
// Calls one operator directly, without a graph or a scheduler: for plugin
// tests, for the "direct call" side of the engine-overhead benchmark, and for
// tools. Parameters are validated exactly as in a workflow.
#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include "memory/device.hpp"
#include "plugin/registry.hpp"
#include "runtime/contexts.hpp"
#include "util/log.hpp"
#include "workflow/graph.hpp"

namespace flowd::runtime {

class OperatorHarness {
public:
  using Emitted = std::vector<std::pair<std::size_t, Item>>;  // (output port, item)

  // Throws flowd::Error listing parameter problems.
  OperatorHarness(plugin::OperatorHandle handle, const Json& params, Logger& log, std::string stage = "harness");
  ~OperatorHarness();

  const OperatorSpec& spec() const noexcept { return node_.spec(); }
  Operator& op() noexcept { return *node_.op; }

  // Map: one task on the given inputs (one per input port, in port order).
  Emitted map(std::vector<Item> inputs);
  // Map through the GPU variant on `device`: host inputs are uploaded, the
  // variant runs on the device's stream, outputs come back as host arrays
  // (for comparing a GPU variant with its CPU twin). Throws flowd::Error if
  // the operator has no GPU variant.
  Emitted map_on(memory::Device& device, std::vector<Item> inputs);
  // Scan: one combine of two operands, with shortcut() tried first as the
  // engine does. `others` are the items the combine may read by key
  // (ctx.item(port, key)): each with the index of its input port (>= 1).
  using Keyed = std::vector<std::pair<std::size_t, Item>>;
  Item combine(const Item& left, const Item& right, const Keyed& others = {});
  // The same through the GPU combine on `device`: operands and others that
  // are host arrays are uploaded, a device array result comes back to the
  // host. Throws flowd::Error if the operator has no GPU combine.
  Item combine_on(memory::Device& device, const Item& left, const Item& right, const Keyed& others = {});
  // Source: open() then next() until it returns false or `limit` calls.
  Emitted source(std::size_t limit = std::numeric_limits<std::size_t>::max());
  // What the source last announced with expect(), if anything.
  std::optional<std::uint64_t> expected() const noexcept { return expected_; }
  // Sink: open() once, consume() per call, then commit() or abort(). The
  // sink's staged files are moved into place by commit() (no manifest is
  // written: the harness runs one sink, not a run).
  void consume(std::vector<Item> inputs);
  void commit();
  void abort();
  // Reduce: lift every item, merge left to right, finish.
  Item reduce(const std::vector<Item>& items);

  Json provenance = Json::object();

private:
  SinkContextImpl sink_context(const Inputs* in);
  // Checks the count of inputs and points `in` at them (kept in `held`).
  Inputs inputs_of(std::vector<Item>& held) const;

  workflow::StageNode node_;
  Logger& log_;
  std::atomic<bool> stop_{false};
  bool source_open_ = false;
  std::optional<std::uint64_t> expected_;
  bool sink_open_ = false;
  // After node_: destroyed first, so a sink's temporaries go before the sink.
  std::unique_ptr<OutputSet> outputs_;
};

}  // namespace flowd::runtime
