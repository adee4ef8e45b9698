#include "store/checkpoint.hpp"

#include <algorithm>
#include <optional>
#include <system_error>
#include <unordered_set>

#include "flowd/error.hpp"

namespace flowd::store {

namespace {

namespace fs = std::filesystem;

// Journal records are "stage finished item (key, version, timestamp) with
// digest"; the checkpoint's two kinds are told apart by a prefix of the
// stage field, and the epoch goes in the version, so one journal line reads:
//   done <hash> finished:<source stage> <key> <epoch> 0 source-item <xxh64>
//   done <hash> sink-input:<sink stage> <key> <epoch> <seq> <json> <xxh64>
//   done <hash> epoch ~ <epoch> 0 started <xxh64>
// The sink input's JSON names, per port, the id the item had (or null for an
// unconnected port) and the source items it derives from.
constexpr std::string_view finished_prefix = "finished:";
constexpr std::string_view kept_prefix = "sink-input:";
constexpr std::string_view finished_digest = "source-item";
// Marks each open, so epochs count runs even when one wrote nothing else.
constexpr std::string_view epoch_stage = "epoch";

// Stage names cannot hold NUL (they are workflow JSON keys that name things
// on the command line), so this pair encoding is unambiguous.
std::string source_id(std::string_view stage, std::string_view key) {
  std::string s;
  s.reserve(stage.size() + key.size() + 1);
  s.append(stage);
  s += '\0';
  s.append(key);
  return s;
}

// The store holds a kept item under a name of the checkpoint's, not under
// the item's own id: two sink inputs (two sinks, or two epochs) may carry
// items with the same id.
wire::ItemId store_id(std::int64_t epoch, std::int64_t seq, std::size_t port) {
  return wire::ItemId{"sink-input/" + std::to_string(epoch) + "/" + std::to_string(seq) + "/" + std::to_string(port), 0,
                      0};
}

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

}  // namespace

Journal JournalCheckpoint::open_journal(const fs::path& dir, const std::string& workflow_hash, bool resume) {
  const fs::path journal = dir / journal_file, items = dir / store_file;
  std::error_code ec;
  const bool has_journal = fs::exists(journal, ec) && fs::file_size(journal, ec) > 0;
  if (resume) {
    if (!has_journal)
      throw Error("journal '" + journal.string() + "' does not exist (or is empty): --resume continues a run started "
                  "with --journal " + dir.string() + "; leave --resume out to start one");
  } else {
    // Never overwritten: it may be the only record of hours of work.
    if (has_journal)
      throw Error("journal '" + journal.string() + "' already exists: use --resume to continue it, or remove " +
                  dir.string() + " to run from scratch");
    if (fs::exists(items, ec))
      throw Error("item store '" + items.string() + "' already exists without a journal beside it: remove " +
                  dir.string() + " to run from scratch");
    fs::create_directories(dir, ec);
    if (ec) throw Error("cannot create the journal directory '" + dir.string() + "': " + ec.message());
  }
  return Journal::open(journal, workflow_hash);
}

JournalCheckpoint::JournalCheckpoint(const fs::path& dir, const std::string& workflow_hash, bool resume)
    : journal_(open_journal(dir, workflow_hash, resume)), store_(dir / store_file) {
  load();
  journal_.record(std::string(epoch_stage), wire::ItemId{"", epoch_, 0}, "started");
}

JournalCheckpoint::~JournalCheckpoint() = default;

void JournalCheckpoint::load() {
  struct Kept {
    std::string sink;
    std::int64_t epoch = 0;
    Tuple ports;
    std::vector<std::string> sources;  // source_id
  };
  const std::string where = "journal '" + journal_.path().string() + "'";
  std::map<std::string, std::int64_t, std::less<>> finished_in;  // source_id -> its epoch
  std::vector<Kept> kept;
  std::int64_t last_epoch = 0;

  for (const auto& r : journal_.records()) {
    const std::string at = where + ", record of stage '" + r.stage + "' item '" + r.item.key + "'";
    last_epoch = std::max(last_epoch, r.item.version);
    if (r.stage == epoch_stage) {
      // only its epoch number counts
    } else if (starts_with(r.stage, finished_prefix)) {
      finished_in[source_id(std::string_view(r.stage).substr(finished_prefix.size()), r.item.key)] = r.item.version;
    } else if (starts_with(r.stage, kept_prefix)) {
      Kept k;
      k.sink = r.stage.substr(kept_prefix.size());
      k.epoch = r.item.version;
      try {
        const Json d = Json::parse(r.digest);
        std::size_t port = 0;
        for (const auto& p : d.at("ports")) {
          if (p.is_null()) k.ports.emplace_back(std::nullopt);
          else
            k.ports.push_back(Port{store_id(k.epoch, r.item.timestamp, port),
                                   wire::ItemId{p.at("key").get<std::string>(), p.at("version").get<std::int64_t>(),
                                                p.at("timestamp").get<std::int64_t>()}});
          ++port;
        }
        for (const auto& s : d.at("sources"))
          k.sources.push_back(source_id(s.at(0).get<std::string>(), s.at(1).get<std::string>()));
      } catch (const Json::exception& e) {
        throw Error(at + ": not a kept sink input (" + e.what() +
                    "); remove the journal's directory to run from scratch");
      }
      kept.push_back(std::move(k));
    } else {
      throw Error(at + ": not a record of flowd run --journal (the journal was written by something else)");
    }
  }
  epoch_ = last_epoch + 1;

  // The exactly-once rule (see the header): a sink input counts when all its
  // source items finished in its own epoch. One without sources cannot be
  // told apart from a half-done one, so it does not count.
  std::unordered_set<std::string> referenced;
  for (auto& k : kept) {
    const bool valid = !k.sources.empty() && std::all_of(k.sources.begin(), k.sources.end(), [&](const std::string& s) {
      const auto it = finished_in.find(s);
      return it != finished_in.end() && it->second == k.epoch;
    });
    if (!valid) {
      // Older ones were dropped, and counted, by an earlier open.
      if (k.epoch == last_epoch) ++discarded_;
      continue;
    }
    for (const auto& p : k.ports)
      if (p) {
        if (!store_.contains(p->stored))
          throw Error("item store '" + store_.path().string() + "' lacks item '" + p->stored.key + "' that " + where +
                      " kept for sink '" + k.sink + "' (item '" + p->original.key +
                      "'): the directory was altered; remove it to run from scratch");
        referenced.insert(p->stored.key);
      }
    pending_[k.sink].push_back(std::move(k.ports));
    ++replay_total_;
  }
  for (auto& [id, epoch] : finished_in) finished_.insert(id);

  // The store's copies of discarded inputs, and of inputs whose journal
  // record a crash cut off, are never read again: free their space.
  for (const auto& id : store_.ids())
    if (!referenced.contains(id.key)) store_.erase(id);
}

bool JournalCheckpoint::finished(std::string_view source_stage, std::string_view key) const {
  return finished_.contains(source_id(source_stage, key));
}

std::vector<std::vector<std::optional<Item>>> JournalCheckpoint::replay(std::string_view sink_stage) {
  std::vector<Tuple> tuples;
  {
    std::lock_guard lock(m_);
    const auto it = pending_.find(sink_stage);
    if (it == pending_.end()) return {};
    tuples = std::move(it->second);  // handed out once
    pending_.erase(it);
  }
  std::vector<std::vector<std::optional<Item>>> out;
  out.reserve(tuples.size());
  for (const auto& t : tuples) {
    std::vector<std::optional<Item>> items;
    for (const auto& p : t) {
      if (!p) {
        items.emplace_back(std::nullopt);
        continue;
      }
      const auto stored = store_.find(p->stored);
      if (!stored)
        throw Error("item store '" + store_.path().string() + "' lost item '" + p->stored.key + "' kept for sink '" +
                    std::string(sink_stage) + "'");
      Item item = *stored;
      item.meta.key = p->original.key;
      item.meta.version = p->original.version;
      item.meta.timestamp = p->original.timestamp;
      items.emplace_back(std::move(item));
    }
    out.push_back(std::move(items));
  }
  return out;
}

void JournalCheckpoint::keep_sink_input(std::string_view sink_stage, const std::vector<const Item*>& inputs,
                                        const std::vector<runtime::SourceRef>& sources) {
  const std::int64_t seq = next_seq_.fetch_add(1);
  std::string tuple_key;
  try {
    // Items first, record last: a crash in between leaves items no record
    // names, which the next open erases; never a record without its items.
    Json ports = Json::array();
    for (std::size_t p = 0; p < inputs.size(); ++p) {
      if (!inputs[p]) {
        ports.push_back(nullptr);
        continue;
      }
      const Item& in = *inputs[p];
      if (tuple_key.empty()) tuple_key = in.meta.key;
      Item copy = in;
      const wire::ItemId id = store_id(epoch_, seq, p);
      copy.meta.key = id.key;
      copy.meta.version = id.version;
      copy.meta.timestamp = id.timestamp;
      store_.put(copy);
      ports.push_back(Json{{"key", in.meta.key}, {"version", in.meta.version}, {"timestamp", in.meta.timestamp}});
    }
    Json src = Json::array();
    for (const auto& s : sources) src.push_back(Json::array({s.stage, s.key}));
    const std::string digest = Json{{"ports", std::move(ports)}, {"sources", std::move(src)}}.dump();
    journal_.record(std::string(kept_prefix) + std::string(sink_stage), wire::ItemId{tuple_key, epoch_, seq}, digest);
  } catch (const Json::exception& e) {
    // Keys that are not UTF-8 cannot go into the record's JSON.
    throw Error("journal '" + journal_.path().string() + "': cannot keep the input of sink '" +
                std::string(sink_stage) + "' (item '" + tuple_key + "'): " + e.what());
  }
}

void JournalCheckpoint::finish(const runtime::SourceRef& item) {
  journal_.record(std::string(finished_prefix) + item.stage, wire::ItemId{item.key, epoch_, 0},
                  std::string(finished_digest));
}

}  // namespace flowd::store
