#include "runtime/contexts.hpp"

namespace flowd::runtime {

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
