#pragma once
// The engine's implementations of the SDK contexts handed to operators.
#include <atomic>
#include <optional>
#include <utility>
#include <vector>

#include "runtime/carried.hpp"
#include "util/log.hpp"
#include "workflow/graph.hpp"

namespace flowd::runtime {

template <class Base>
class ContextImpl : public Base {
public:
  ContextImpl(const workflow::StageNode& node, const Tuple* tuple, Logger& log, const std::atomic<bool>& stop)
      : node_(node), tuple_(tuple), log_(log), stop_(stop) {}

  const std::string& stage() const noexcept override { return node_.name; }
  const OperatorSpec& spec() const noexcept override { return node_.spec(); }
  Device device() const noexcept override { return Device::cpu; }
  bool cancelled() const noexcept override { return stop_.load(std::memory_order_relaxed); }
  void log(LogLevel level, std::string_view message) override {
    std::string prefix = "[" + node_.name + (tuple_ && !tuple_->key.empty() ? " " + tuple_->key : "") + "] ";
    log_.log(level, prefix + std::string(message));
  }
  const Item* find_input(std::size_t port) const noexcept override {
    if (!tuple_ || port >= tuple_->ports.size() || !tuple_->ports[port]) return nullptr;
    return &tuple_->ports[port]->item;
  }

protected:
  const workflow::StageNode& node_;
  const Tuple* tuple_;
  Logger& log_;
  const std::atomic<bool>& stop_;
};

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
  using ContextImpl::ContextImpl;
  void emit(std::size_t port, Item item) override { out.add(node_, port, std::move(item)); }
  Emitted out;
};

class SourceContextImpl final : public ContextImpl<SourceContext> {
public:
  using ContextImpl::ContextImpl;
  void emit(std::size_t port, Item item) override { out.add(node_, port, std::move(item)); }
  void expect(std::uint64_t total) override { expected = total; }
  Emitted out;
  std::optional<std::uint64_t> expected;
};

class SinkContextImpl final : public ContextImpl<SinkContext> {
public:
  SinkContextImpl(const workflow::StageNode& node, const Tuple* tuple, Logger& log, const std::atomic<bool>& stop,
                  const Json& provenance)
      : ContextImpl(node, tuple, log, stop), provenance_(provenance) {}
  const Json& provenance() const noexcept override { return provenance_; }

private:
  const Json& provenance_;
};

using ReduceContextImpl = ContextImpl<Context>;

}  // namespace flowd::runtime
