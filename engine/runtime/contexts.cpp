#include "runtime/contexts.hpp"

#include <chrono>
#include <thread>

namespace flowd::runtime {

template <class Base> void ContextImpl<Base>::simulate_compute(double seconds) {
  // Sleeps in slices so a cancelled run does not wait out a long simulation.
  auto left = std::chrono::duration<double>(seconds * time_scale_);
  const auto slice = std::chrono::duration<double>(0.05);
  while (left.count() > 0 && !cancelled()) {
    const auto d = std::min(left, slice);
    std::this_thread::sleep_for(d);
    left -= d;
  }
}

template class ContextImpl<Context>;
template class ContextImpl<EmitContext>;
template class ContextImpl<GpuContext>;
template class ContextImpl<SourceContext>;
template class ContextImpl<SinkContext>;
template class ContextImpl<ScanContext>;
template class ContextImpl<GpuScanContext>;
template class ContextImpl<GpuAllPairsContext>;

std::optional<std::string> input_mismatch(const PortSpec& in, const Value& value, std::string_view from) {
  if (in.type.accepts(value)) return std::nullopt;
  return "received " + describe(value) + (from.empty() ? "" : " from " + std::string(from)) + " on input '" + in.name +
         "', which expects " + in.type.str();
}

void Emitted::add(const workflow::StageNode& node, std::size_t port, Item item) {
  const auto& outputs = node.spec().outputs;
  if (port >= outputs.size())
    throw Error("emitted on output port " + std::to_string(port) + " but " + node.spec().name + " declares " +
                std::to_string(outputs.size()));
  const PortSpec& p = outputs[port];
  if (!p.type.accepts(item.value))
    throw Error("emitted " + describe(item.value) + " on output '" + p.name + "', declared " + p.type.str());
  if (item.meta.key.empty()) throw Error("emitted an item without a key on output '" + p.name + "'");
  items_.emplace_back(port, std::move(item));
}

void Emitted::check_required(const workflow::StageNode& node) const {
  const auto& outputs = node.spec().outputs;
  for (std::size_t port = 0; port < outputs.size(); ++port) {
    if (outputs[port].optional) continue;
    bool any = false;
    for (const auto& [p, item] : items_) any |= p == port;
    if (!any) throw Error("produced nothing on required output '" + outputs[port].name + "'");
  }
}

}  // namespace flowd::runtime
