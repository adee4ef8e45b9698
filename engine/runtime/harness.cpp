#include "runtime/harness.hpp"

#include "runtime/contexts.hpp"
#include "workflow/validate.hpp"

namespace flowd::runtime {

OperatorHarness::OperatorHarness(plugin::OperatorHandle handle, const Json& params, Logger& log, std::string stage)
    : node_{std::move(stage), 0, std::move(handle), {}, {}, nullptr, {}, {}, {}}, log_(log) {
  workflow::Diagnostics d;
  node_.params = workflow::resolve_params(node_.spec(), params, "/params", d);
  if (!d.empty()) throw workflow::ValidationError(node_.spec().name, d.items());
  node_.op = node_.handle.create(node_.params);
  node_.inputs.resize(node_.spec().inputs.size());
  node_.consumers.resize(node_.spec().outputs.size());
}

OperatorHarness::~OperatorHarness() = default;

Inputs OperatorHarness::inputs_of(std::vector<Item>& held) const {
  if (held.size() > spec().inputs.size())
    throw Error(spec().name + ": " + std::to_string(held.size()) + " inputs given, " +
                std::to_string(spec().inputs.size()) + " declared");
  Inputs in;
  in.key = held.empty() ? std::string() : held.front().meta.key;
  for (const auto& item : held) in.items.push_back(&item);
  return in;
}

OperatorHarness::Emitted OperatorHarness::map(std::vector<Item> inputs) {
  const Inputs in = inputs_of(inputs);
  MapContextImpl ctx(node_, &in, log_, stop_);
  static_cast<const Map&>(*node_.op).cpu(ctx);
  ctx.out.check_required(node_);
  return std::move(ctx.out.items());
}

OperatorHarness::Emitted OperatorHarness::map_on(memory::Device& device, std::vector<Item> inputs) {
  const auto gpu_of = node_.handle.factory().gpu_variant;
  if (!gpu_of) throw Error(spec().name + " has no GPU variant");
  std::vector<Item> on_device;
  for (auto& item : inputs) {
    Item d{item.meta, item.value};
    if (const auto* a = std::get_if<Array>(&item.value)) d.value = device.upload(*a);
    on_device.push_back(std::move(d));
  }
  const Inputs in = inputs_of(on_device);
  GpuContextImpl ctx(node_, &in, log_, stop_, device);
  gpu_of(*node_.op)->gpu(ctx);
  device.synchronize();
  ctx.out.check_required(node_);
  Emitted out = std::move(ctx.out.items());
  for (auto& [port, item] : out)
    if (auto* a = std::get_if<Array>(&item.value); a && a->placement().residency == Residency::device)
      item.value = device.download(*a);
  return out;
}

namespace {

// ctx.item(port, key) over the harness's `others`.
ItemLookup lookup_in(const OperatorHarness::Keyed& others, const OperatorSpec& spec) {
  return [&others, &spec](std::size_t port, std::string_view key) -> const Item& {
    for (const auto& [p, item] : others)
      if (p == port && item.meta.key == key) return item;
    throw Error("no item with key '" + std::string(key) + "' on input '" + spec.inputs.at(port).name + "'");
  };
}

Item on_device(memory::Device& device, const Item& item) {
  Item d{item.meta, item.value};
  if (const auto* a = std::get_if<Array>(&item.value)) d.value = device.upload(*a);
  return d;
}

}  // namespace

Item OperatorHarness::combine(const Item& left, const Item& right, const Keyed& others) {
  const auto& scan = static_cast<const Scan&>(*node_.op);
  const Inputs in{right.meta.key, {&left, &right}};
  ScanContextImpl ctx(node_, &in, log_, stop_, lookup_in(others, spec()));
  if (auto quick = scan.shortcut(ctx, left, right)) return std::move(*quick);
  return scan.combine(ctx, left, right);
}

Item OperatorHarness::combine_on(memory::Device& device, const Item& left, const Item& right, const Keyed& others) {
  const auto gpu_of = node_.handle.factory().gpu_scan_variant;
  if (!gpu_of) throw Error(spec().name + " has no GPU combine");
  const auto& scan = static_cast<const Scan&>(*node_.op);
  const Item a = on_device(device, left), b = on_device(device, right);
  Keyed placed;
  for (const auto& [port, item] : others) placed.emplace_back(port, on_device(device, item));
  const Inputs in{right.meta.key, {&a, &b}};
  GpuScanContextImpl ctx(node_, &in, log_, stop_, lookup_in(placed, spec()), device);
  if (auto quick = scan.shortcut(ctx, a, b)) return std::move(*quick);
  Item out = gpu_of(*node_.op)->combine_gpu(ctx, a, b);
  device.synchronize();
  if (auto* arr = std::get_if<Array>(&out.value); arr && arr->placement().residency == Residency::device)
    out.value = device.download(*arr);
  return out;
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

SinkContextImpl OperatorHarness::sink_context(const Inputs* in) {
  if (!outputs_) {
    OutputSet::Options o;
    o.manifests = false;
    outputs_ = std::make_unique<OutputSet>(std::move(o), log_);
  }
  return SinkContextImpl(node_, in, log_, stop_, provenance, *outputs_);
}

void OperatorHarness::consume(std::vector<Item> inputs) {
  auto& sink = static_cast<Sink&>(*node_.op);
  if (!sink_open_) {
    SinkContextImpl ctx = sink_context(nullptr);
    sink.open(ctx);
    sink_open_ = true;
  }
  const Inputs in = inputs_of(inputs);
  SinkContextImpl ctx = sink_context(&in);
  sink.consume(ctx);
}

void OperatorHarness::commit() {
  auto& sink = static_cast<Sink&>(*node_.op);
  SinkContextImpl ctx = sink_context(nullptr);
  if (!sink_open_) {
    sink.open(ctx);
    sink_open_ = true;
  }
  try {
    sink.commit(ctx);
    outputs_->commit();
  } catch (...) {
    sink.abort();
    outputs_->abort();
    throw;
  }
}

void OperatorHarness::abort() {
  static_cast<Sink&>(*node_.op).abort();
  if (outputs_) outputs_->abort();
}

Item OperatorHarness::reduce(const std::vector<Item>& items) {
  if (items.empty()) throw Error(spec().name + ": reduce of no items");
  const auto& op = static_cast<const Reduce&>(*node_.op);
  const Inputs none;
  ReduceContextImpl ctx(node_, &none, log_, stop_);
  Item acc = op.lift(ctx, items.front());
  for (std::size_t i = 1; i < items.size(); ++i) acc = op.merge(ctx, std::move(acc), op.lift(ctx, items[i]));
  return op.finish(ctx, std::move(acc));
}

}  // namespace flowd::runtime
