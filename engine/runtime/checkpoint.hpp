#pragma once
// What a resumable run remembers (flowd run --journal DIR, --resume): which
// source items were finished, and what the sinks were given for them, so a
// run started again after a crash skips finished work and still writes
// everything. The run calls it; engine/store/checkpoint.hpp keeps it in
// a journal and an HDF5 item store.
//
// A source item is finished when every task derived from it ran without
// failure (its credit came back, carried.hpp). Sink inputs are kept before
// the sink consumes them, so by the time a source item is finished all
// that its sinks got from it is durable.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "flowd/item.hpp"

namespace flowd::runtime {

struct SourceRef {
  std::string stage;
  std::string key;
  friend bool operator==(const SourceRef&, const SourceRef&) = default;
};

class Checkpoint {
public:
  virtual ~Checkpoint() = default;
  // Finished by an earlier run: the source's item is dropped, not routed.
  virtual bool finished(std::string_view source_stage, std::string_view key) const = 0;
  // What earlier runs gave sink `sink_stage` for finished source items, as
  // tuples by input port (nullopt: unconnected port). Called once per sink
  // before any source runs.
  virtual std::vector<std::vector<std::optional<Item>>> replay(std::string_view sink_stage) = 0;
  // Sink `sink_stage` is about to consume `inputs` (by port; null when
  // unconnected), derived from `sources`: keep them durably first. Throws
  // flowd::Error when they cannot be kept (the task fails).
  virtual void keep_sink_input(std::string_view sink_stage, const std::vector<const Item*>& inputs,
                               const std::vector<SourceRef>& sources) = 0;
  // Every task derived from this source item ran without failure.
  virtual void finish(const SourceRef& item) = 0;
};

}  // namespace flowd::runtime
