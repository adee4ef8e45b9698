#include "runtime/allpairs_gpu.hpp"

#include "flowd/error.hpp"
#include "runtime/contexts.hpp"

namespace flowd::runtime::detail {

namespace {

// The item with its array (if it is one) copied to `dev`; tables and JSON
// stay where they are.
Item on_device(memory::Device& dev, const Item& host) {
  Item out{host.meta, {}};
  if (const auto* a = std::get_if<Array>(&host.value))
    out.value = dev.upload(*a);
  else
    out.value = host.value;
  return out;
}

// The item with a device array brought back to the host.
Item on_host(memory::Device& dev, Item item) {
  if (auto* a = std::get_if<Array>(&item.value); a && a->placement().residency == Residency::device)
    item.value = dev.download(*a);
  return item;
}

}  // namespace

AllPairsGpuLanes::AllPairsGpuLanes(const workflow::StageNode& node, const WorkerSet& workers,
                                   std::size_t device_slots, std::size_t host_slots)
    : node_(node),
      workers_(workers),
      variant_(node.handle.factory().gpu_allpairs_variant ? node.handle.factory().gpu_allpairs_variant(*node.op)
                                                          : nullptr),
      kinds_(sched::cpu_only | sched::bit(sched::WorkerKind::sim_gpu) |
             (variant_ ? sched::bit(sched::WorkerKind::gpu) : sched::KindMask{0})) {
  const std::size_t slots = device_slots ? device_slots : host_slots;
  for (const auto& w : workers.workers) {
    if ((kinds_ & sched::bit(w.kind)) == 0 || !sched::is_gpu_like(w.kind)) continue;
    auto& c = caches_[w.id];
    c = std::make_unique<sched::ItemCache<Item>>(slots);
    near_.caches.push_back(c.get());
    if (w.kind == sched::WorkerKind::gpu) {
      ++gpu_lanes_;
      if (!pin_with_) pin_with_ = &device_of(w);
    }
  }
  near_.cache_of = [this](const sched::WorkerInfo& w) -> sched::ItemCache<Item>* {
    const auto it = caches_.find(w.id);
    return it == caches_.end() ? nullptr : it->second.get();
  };
  near_.promote = [this](const sched::WorkerInfo& w, std::uint64_t, const Item& host) {
    return on_device(device_of(w), host);
  };
}

bool AllPairsGpuLanes::runs_variant(const sched::WorkerInfo& w) const noexcept {
  return variant_ && w.kind == sched::WorkerKind::gpu;
}

memory::Device& AllPairsGpuLanes::device_of(const sched::WorkerInfo& w) const {
  const auto id = static_cast<std::size_t>(w.id);
  if (id >= workers_.devices.size() || !workers_.devices[id])
    throw Error("worker '" + w.name + "' has no device for the all-pairs stage's GPU lane");
  return *workers_.devices[id];
}

const char* AllPairsGpuLanes::kind_name(const sched::WorkerInfo& w) noexcept {
  return w.kind == sched::WorkerKind::gpu ? "gpu" : w.kind == sched::WorkerKind::sim_gpu ? "sim" : "cpu";
}

Item AllPairsGpuLanes::load(const sched::WorkerInfo& w, const Item& raw, bool on_lane, Logger& log,
                            const std::atomic<bool>& stop) const {
  Item result;
  if (on_lane && runs_variant(w)) {
    const auto& op = static_cast<const AllPairs&>(*node_.op);
    memory::Device& dev = device_of(w);
    const Inputs inputs{raw.meta.key, {&raw}};
    ReduceContextImpl ctx(node_, &inputs, log, stop);
    Item loaded = op.load(ctx, raw);
    GpuAllPairsContextImpl gctx(node_, &inputs, log, stop, dev);
    std::optional<Item> pre = variant_->preprocess_gpu(gctx, loaded);
    if (pre) {
      dev.synchronize();
      result = on_host(dev, std::move(*pre));
    } else {
      result = op.preprocess(ctx, std::move(loaded));
    }
  } else {
    result = load_preprocessed(node_, raw, log, stop);
  }
  if (pin_with_)
    if (auto* a = std::get_if<Array>(&result.value); a && a->placement().host_accessible())
      result.value = pin_with_->pin(*a);
  return result;
}

void AllPairsGpuLanes::compare(const sched::WorkerInfo& w, Logger& log, const std::atomic<bool>& stop,
                               std::size_t nscores, LaneRows& out, std::int64_t i, std::int64_t j, const Item& a,
                               const Item& b, const std::string& row_key, const std::string& col_key) const {
  if (!runs_variant(w)) {
    compare_pair(node_, log, stop, nscores, out, i, j, a, b, row_key, col_key);
    return;
  }
  memory::Device& dev = device_of(w);
  compare_pair(node_, log, stop, nscores, out, i, j, a, b, row_key, col_key,
               [&](const Inputs& inputs, std::span<double> scores) {
                 GpuAllPairsContextImpl ctx(node_, &inputs, log, stop, dev);
                 variant_->compare_gpu(ctx, a, b, scores);
                 // The compare's temporaries go back to the pool.
                 dev.synchronize();
               });
}

}  // namespace flowd::runtime::detail
