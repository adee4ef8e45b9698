#include "runtime/scan_combiner.hpp"

#include <algorithm>
#include <deque>

#include "runtime/contexts.hpp"

namespace flowd::runtime::detail {

sched::KindMask scan_kinds(const Stage& s) {
  return sched::cpu_only | sched::bit(sched::WorkerKind::sim_gpu) |
         (s.gpu_scan ? sched::bit(sched::WorkerKind::gpu) : sched::KindMask{0});
}

int scan_lanes(const TaskRunner& runner, sched::KindMask kinds) {
  int lanes = 0;
  for (const auto& w : runner.workers().workers)
    lanes += (kinds & sched::bit(w.kind)) != 0;
  return std::max(lanes, 1);
}

CarriedPtr ScanCombiner::operator()(const sched::WorkerInfo& w, const CarriedPtr& left, const CarriedPtr& right) const {
  const Scan& op = static_cast<const Scan&>(*s_.node->op);
  const bool gpu_like = sched::is_gpu_like(w.kind);
  const bool on_gpu = w.kind == sched::WorkerKind::gpu && s_.gpu_scan;
  const int where = gpu_like ? w.id : memory::host;
  const std::string& key = right->item.meta.key;
  const Tuple operands{key, {left, right}};
  std::vector<Item> scratch;
  std::deque<std::vector<Item>> others;  // keeps the items the combine read by key
  double moved = 0;
  Item result;
  const Outcome o = s_.call(runner_.trace(), key, [&] {
    const Inputs in = runner_.place(operands, where, scratch, moved);
    const Item& a = *in.items[0];
    const Item& b = *in.items[1];
    ItemLookup lookup = [&](std::size_t port, std::string_view k) -> const Item& {
      return other_input(port, k, where, others.emplace_back());
    };
    if (on_gpu) {
      memory::Device& dev = *runner_.workers().devices[static_cast<std::size_t>(w.id)];
      GpuScanContextImpl ctx(*s_.node, &in, runner_.log(), runner_.stop_flag(), lookup, dev);
      if (auto quick = op.shortcut(ctx, a, b)) {
        result = std::move(*quick);
      } else {
        result = s_.gpu_scan->combine_gpu(ctx, a, b);
        dev.synchronize();
      }
    } else {
      ScanContextImpl ctx(*s_.node, &in, runner_.log(), runner_.stop_flag(), lookup);
      if (auto quick = op.shortcut(ctx, a, b))
        result = std::move(*quick);
      else
        result = op.combine(ctx, a, b);
    }
    const PortSpec& out = s_.node->spec().outputs[0];
    if (!out.type.accepts(result.value))
      throw Error("combine returned " + describe(result.value) + ", but output '" + out.name + "' is declared " +
                  out.type.str());
  });
  runner_.trace_task(s_.op(), s_.name(), w, key, on_gpu ? "gpu" : gpu_like ? "sim" : "cpu", o);
  if (!o.ok) throw ItemError(o.key, o.error);
  s_.steps_done.fetch_add(1, std::memory_order_relaxed);
  return runner_.carry(Item{right->item.meta, std::move(result.value)}, {}, &w);
}

const Item& ScanCombiner::other_input(std::size_t port, std::string_view key, int where,
                                      std::vector<Item>& scratch) const {
  const auto& spec = s_.node->spec();
  if (port == 0 || port >= spec.inputs.size())
    throw Error("input '" + (port < spec.inputs.size() ? spec.inputs[port].name : std::to_string(port)) +
                "' is not one a combine may read by key: the series' elements come as operands");
  CarriedPtr c;
  {
    std::unique_lock lk(fetched_m_);
    if (const auto it = fetched_.find(std::pair{port, std::string(key)}); it != fetched_.end()) c = it->second;
  }
  if (!c) {
    // Outside the lock: a pull from another node must not hold up the
    // other lanes' lookups.
    c = others_(port, key);
    if (c->remote) c = std::make_shared<Carried>(Carried{c->remote->fetch(), {}});
    std::lock_guard lk(fetched_m_);
    c = fetched_.try_emplace({port, std::string(key)}, c).first->second;
  }
  double moved = 0;
  const Inputs in = runner_.place(Tuple{std::string(key), {c}}, where, scratch, moved);
  // Valid while `c` lives: kept in fetched_ for the combiner's life.
  return *in.items[0];
}

}  // namespace flowd::runtime::detail
