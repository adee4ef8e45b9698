#include "runtime/node_sinks.hpp"

#include "runtime/task_runner.hpp"

namespace flowd::runtime::detail {

namespace {
constexpr std::string_view step_names[] = {"open",    "consume", "commit_sink", "abort_sink",
                                           "prepare", "commit",  "discard"};
}

std::optional<SinkStep> parse_sink_step(std::string_view name) {
  for (std::size_t i = 0; i < std::size(step_names); ++i)
    if (step_names[i] == name) return static_cast<SinkStep>(i);
  return std::nullopt;
}

std::string_view name_of(SinkStep step) { return step_names[static_cast<std::size_t>(step)]; }

NodeSinks::~NodeSinks() {
  for (auto& [name, s] : open_) {
    try {
      static_cast<Sink&>(*s->node->op).abort();
    } catch (...) {
      // abort() is noexcept by contract; a plugin that throws anyway must not
      // keep the other sinks' temporaries alive.
    }
  }
  if (outputs_ && !open_.empty())
    log_.warn("the run ended without committing the outputs of this node's sinks: none were written");
  // outputs_'s destructor removes every temporary unless it committed.
}

OutputSet& NodeSinks::outputs(const Json& spec) {
  if (!outputs_) {
    OutputSet::Options o;
    o.overwrite = spec.value("overwrite", false);
    if (const auto p = spec.find("provenance"); p != spec.end() && p->is_object()) provenance_ = *p;
    o.provenance = provenance_;
    outputs_.emplace(std::move(o), log_);
  }
  return *outputs_;
}

void NodeSinks::run(Stage& s, const Json& spec, const Inputs* inputs, const std::atomic<bool>& stop) {
  const std::string step_name = spec.value("step", std::string());
  const auto step = parse_sink_step(step_name);
  if (!step) throw Error("sink '" + s.name() + "': no step '" + step_name + "' (an older or newer flowd on the coordinator?)");
  auto& sink = static_cast<Sink&>(*s.node->op);
  std::unique_lock lk(m_);
  if (*step != SinkStep::open && *step != SinkStep::discard && !outputs_)
    throw Error("sink '" + s.name() + "': step '" + step_name + "' before the sink was opened on this node");
  switch (*step) {
    case SinkStep::open: {
      OutputSet& out = outputs(spec);
      open_[s.name()] = &s;
      lk.unlock();
      SinkContextImpl ctx(*s.node, nullptr, log_, stop, provenance_, out);
      sink.open(ctx);
      if (spec.value("check", false)) out.check_existing();
      return;
    }
    case SinkStep::consume: {
      if (!inputs) throw Error("sink '" + s.name() + "': a consume step without inputs");
      OutputSet& out = *outputs_;
      lk.unlock();
      SinkContextImpl ctx(*s.node, inputs, log_, stop, provenance_, out);
      sink.consume(ctx);
      return;
    }
    case SinkStep::commit_sink: {
      OutputSet& out = *outputs_;
      lk.unlock();
      SinkContextImpl ctx(*s.node, nullptr, log_, stop, provenance_, out);
      sink.commit(ctx);
      lk.lock();
      open_.erase(s.name());
      return;
    }
    case SinkStep::abort_sink:
      if (open_.erase(s.name())) sink.abort();
      return;
    case SinkStep::prepare: outputs_->prepare(); return;
    case SinkStep::commit:
      outputs_->commit();
      log_.info("the outputs of this node's sinks are in place");
      return;
    case SinkStep::discard:
      if (outputs_) outputs_->abort();
      return;
  }
}

}  // namespace flowd::runtime::detail
