#include "runtime/harness.hpp"

#include "runtime/contexts.hpp"
#include "workflow/validate.hpp"

namespace flowd::runtime {

OperatorHarness::OperatorHarness(plugin::OperatorHandle handle, const Json& params, Logger& log, std::string stage)
    : node_{std::move(stage), 0, std::move(handle), {}, nullptr, {}, {}}, log_(log) {
  workflow::Diagnostics d;
  node_.params = workflow::resolve_params(node_.spec(), params, "/params", d);
  if (!d.empty()) throw workflow::ValidationError(node_.spec().name, d.items());
  node_.op = node_.handle.create(node_.params);
  node_.inputs.resize(node_.spec().inputs.size());
  node_.consumers.resize(node_.spec().outputs.size());
}

OperatorHarness::~OperatorHarness() = default;

Tuple OperatorHarness::tuple_of(std::vector<Item> inputs) const {
  if (inputs.size() > spec().inputs.size())
    throw Error(spec().name + ": " + std::to_string(inputs.size()) + " inputs given, " +
                std::to_string(spec().inputs.size()) + " declared");
  Tuple t;
  t.key = inputs.empty() ? std::string() : inputs.front().meta.key;
  for (auto& item : inputs) t.ports.push_back(std::make_shared<const Carried>(Carried{std::move(item), {}}));
  return t;
}

OperatorHarness::Emitted OperatorHarness::map(std::vector<Item> inputs) {
  Tuple t = tuple_of(std::move(inputs));
  MapContextImpl ctx(node_, &t, log_, stop_);
  static_cast<const Map&>(*node_.op).cpu(ctx);
  ctx.out.check_required(node_);
  return std::move(ctx.out.items());
}

OperatorHarness::Emitted OperatorHarness::source(std::size_t limit) {
  SourceContextImpl ctx(node_, nullptr, log_, stop_);
  auto& src = static_cast<Source&>(*node_.op);
  if (!source_open_) {
    src.open(ctx);
    source_open_ = true;
    if (ctx.expected) expected_ = ctx.expected;
  }
  for (std::size_t i = 0; i < limit && src.next(ctx); ++i) {
  }
  if (ctx.expected) expected_ = ctx.expected;
  return std::move(ctx.out.items());
}

void OperatorHarness::consume(std::vector<Item> inputs) {
  auto& sink = static_cast<Sink&>(*node_.op);
  if (!sink_open_) {
    SinkContextImpl ctx(node_, nullptr, log_, stop_, provenance);
    sink.open(ctx);
    sink_open_ = true;
  }
  Tuple t = tuple_of(std::move(inputs));
  SinkContextImpl ctx(node_, &t, log_, stop_, provenance);
  sink.consume(ctx);
}

void OperatorHarness::commit() {
  auto& sink = static_cast<Sink&>(*node_.op);
  SinkContextImpl ctx(node_, nullptr, log_, stop_, provenance);
  if (!sink_open_) {
    sink.open(ctx);
    sink_open_ = true;
  }
  sink.commit(ctx);
}

void OperatorHarness::abort() { static_cast<Sink&>(*node_.op).abort(); }

Item OperatorHarness::reduce(const std::vector<Item>& items) {
  if (items.empty()) throw Error(spec().name + ": reduce of no items");
  const auto& op = static_cast<const Reduce&>(*node_.op);
  Tuple none;
  ReduceContextImpl ctx(node_, &none, log_, stop_);
  Item acc = op.lift(ctx, items.front());
  for (std::size_t i = 1; i < items.size(); ++i) acc = op.merge(ctx, std::move(acc), op.lift(ctx, items[i]));
  return op.finish(ctx, std::move(acc));
}

}  // namespace flowd::runtime
