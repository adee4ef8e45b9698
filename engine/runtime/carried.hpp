#pragma once
// Items as they travel between stages inside a run.
//
// Every item a source emits takes a credit from that source's window; all
// items derived from it share the credit, and it returns to the source when
// the last of them is gone. That bounds the memory of a run by the window,
// whatever the input size, with no bookkeeping beyond reference counts.
#include <algorithm>
#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "flowd/item.hpp"
#include "memory/residency.hpp"

namespace flowd::runtime {

class Credit {
public:
  // `source` names the source item (stage and key) the credit stands for.
  Credit(std::string source_stage, std::string key, std::function<void(const Credit&)> on_return)
      : source_stage_(std::move(source_stage)), key_(std::move(key)), on_return_(std::move(on_return)) {}
  ~Credit() { on_return_(*this); }
  Credit(const Credit&) = delete;
  Credit& operator=(const Credit&) = delete;

  const std::string& source_stage() const noexcept { return source_stage_; }
  const std::string& key() const noexcept { return key_; }
  // Some task derived from the source item failed (a resumable run must not
  // count it as finished).
  void mark_failed() const noexcept { failed_.store(true); }
  bool failed() const noexcept { return failed_.load(); }

private:
  std::string source_stage_, key_;
  std::function<void(const Credit&)> on_return_;
  mutable std::atomic<bool> failed_{false};
};

using CreditPtr = std::shared_ptr<Credit>;

// An item held by another node of a cluster run (runtime/remote.hpp). The
// implementation releases it on its holder when the last reference goes.
class RemoteItem {
public:
  virtual ~RemoteItem() = default;
  // The value, pulled from wherever it lives now (recomputed first when its
  // holder was lost). Thread-safe; throws flowd::Error saying why it failed.
  virtual Item fetch() const = 0;
  // A hint that fetch() will be called soon: start pulling the value now,
  // in the background, so that fetch() finds it (or waits for the pull in
  // progress instead of starting another). A sink, which takes one item at
  // a time, then pulls the next while it writes this one. Never blocks.
  virtual void fetch_ahead() const {}
  // Which node holds it, for messages ("worker 3 (host:pid)").
  virtual std::string holder() const = 0;
};

// An item plus the source credits it holds; immutable once made, shared by
// every consumer of the port it was emitted on. `where` tracks the memories
// holding a valid copy of its array (mutable: copies are a cache). An item
// made on another node has only its metadata here (item.value is empty) and
// `remote` says where the value is.
struct Carried {
  Item item;
  std::vector<CreditPtr> credits;
  mutable memory::Residency where = memory::Residency::on_host();
  std::shared_ptr<const RemoteItem> remote{};
};
using CarriedPtr = std::shared_ptr<const Carried>;

// The items of one task: one per input port (null for an unconnected
// optional port), matched by key when a stage has several inputs.
struct Tuple {
  std::string key;
  std::vector<CarriedPtr> ports;
  bool replayed = false;  // a sink input kept by an earlier run (checkpoint.hpp)

  void mark_failed() const {
    for (const auto& p : ports)
      if (p)
        for (const auto& c : p->credits) c->mark_failed();
  }

  // The credits of every input, without repeats: what outputs inherit.
  std::vector<CreditPtr> credits() const {
    std::vector<CreditPtr> all;
    for (const auto& p : ports)
      if (p)
        for (const auto& c : p->credits)
          if (std::find(all.begin(), all.end(), c) == all.end()) all.push_back(c);
    return all;
  }
};

}  // namespace flowd::runtime
