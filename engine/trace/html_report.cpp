#include "trace/html_report.hpp"

#include <algorithm>
#include <initializer_list>
#include <stdexcept>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "flowd/error.hpp"
#include "trace/report_assets.hpp"
#include "util/fs.hpp"

namespace flowd::trace {

namespace {

using Interval = std::pair<std::int64_t, std::int64_t>;

bool is_copy(const Span& s) { return s.variant == "copy"; }
std::int64_t length_ns(const Span& s) { return std::max<std::int64_t>(0, s.end_ns - s.start_ns); }

// Length of the union of the intervals: overlapping or nested spans on one
// track (a stage task and its sub-tasks) count once.
std::int64_t union_ns(std::vector<Interval> v) {
  std::sort(v.begin(), v.end());
  std::int64_t total = 0;
  std::int64_t cur_start = 0, cur_end = 0;
  bool open = false;
  for (const auto& [a, b] : v) {
    if (b <= a) continue;
    if (open && a <= cur_end) {
      cur_end = std::max(cur_end, b);
      continue;
    }
    if (open) total += cur_end - cur_start;
    cur_start = a;
    cur_end = b;
    open = true;
  }
  if (open) total += cur_end - cur_start;
  return total;
}

// Uploads first: data goes to a device before it comes back.
int direction_rank(const std::string& d) { return d == "upload" ? 0 : d == "download" ? 1 : 2; }

// Interns the strings of one span column: the page gets each operator, stage
// and variant name once, and an index per span.
class Interner {
public:
  int operator()(const std::string& s) {
    auto [it, added] = index_.try_emplace(s, static_cast<int>(list_.size()));
    if (added) list_.push_back(s);
    return it->second;
  }
  Json take() { return std::move(list_); }

private:
  std::unordered_map<std::string, int> index_;
  Json list_ = Json::array();
};

// JSON text that can sit inside <script type="application/json">: "</" would
// end the element and "<!--" would switch the HTML tokenizer into a state where
// it might not; U+2028/U+2029 are escaped so the text is valid JavaScript too.
// Invalid UTF-8 in names becomes U+FFFD rather than an exception.
std::string script_safe_json(const Json& j) {
  const std::string text = j.dump(-1, ' ', false, Json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size() + text.size() / 64);
  const std::size_t n = text.size();
  for (std::size_t i = 0; i < n; ++i) {
    const char c = text[i];
    if (c == '<' && i + 1 < n && text[i + 1] == '/') {
      out += "<\\/";
      ++i;
    } else if (c == '<' && text.compare(i, 4, "<!--") == 0) {
      out += "\\u003c!--";
      i += 3;
    } else if (static_cast<unsigned char>(c) == 0xE2 && i + 2 < n && static_cast<unsigned char>(text[i + 1]) == 0x80 &&
               (static_cast<unsigned char>(text[i + 2]) == 0xA8 || static_cast<unsigned char>(text[i + 2]) == 0xA9)) {
      out += static_cast<unsigned char>(text[i + 2]) == 0xA8 ? "\\u2028" : "\\u2029";
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

Json optional_number(const std::optional<double>& v) { return v ? Json(*v) : Json(nullptr); }

Json summary_json(const ReportSummary& s, const std::unordered_map<int, int>& row_of) {
  Json ops = Json::array();
  for (const auto& op : s.operators) {
    Json variants = Json::object();
    for (const auto& [name, v] : op.variants)
      variants[name] = {{"count", v.count}, {"total_ns", v.total_ns}, {"mean_ns", v.mean_ns()}};
    ops.push_back({{"name", op.name},
                   {"subtasks", op.subtasks},
                   {"failed", op.failed},
                   {"total_ns", op.total_ns()},
                   {"variants", std::move(variants)},
                   {"speedup_gpu", optional_number(op.speedup_gpu())},
                   {"speedup_sim", optional_number(op.speedup_sim())}});
  }
  Json tracks = Json::array();
  for (const auto& u : s.tracks)
    tracks.push_back({{"row", row_of.at(u.track)},
                      {"spans", u.spans},
                      {"busy_ns", u.busy_ns},
                      {"utilization", u.utilization}});
  Json transfers = Json::array();
  for (const auto& x : s.transfers)
    transfers.push_back({{"row", row_of.at(x.track)},
                         {"direction", x.direction},
                         {"count", x.count},
                         {"bytes", x.bytes},
                         {"busy_ns", x.busy_ns},
                         {"bandwidth", x.bandwidth()}});
  return {{"duration_ns", s.duration_ns},
          {"operators", std::move(ops)},
          {"tracks", std::move(tracks)},
          {"transfers", std::move(transfers)},
          {"totals", {{"tasks", s.tasks}, {"copies", s.copies}, {"failed", s.failed}}}};
}

// report.html marks where the style sheet, the run's data and the script go.
// The CSS and JS markers are whole lines, newline included, because the files
// end with a newline of their own: the page holds each file's bytes exactly.
constexpr std::string_view css_marker = "/* flowd: report.css */\n";
constexpr std::string_view data_marker = "/* flowd: run data */";
constexpr std::string_view base_js_marker = "/* flowd: report_base.js */\n";
constexpr std::string_view js_marker = "/* flowd: report.js */\n";

// The template with each marker replaced by its text, markers in page order.
std::string fill(std::string_view page, std::initializer_list<std::pair<std::string_view, std::string_view>> inserts) {
  std::size_t size = page.size();
  for (const auto& in : inserts) size += in.second.size();
  std::string out;
  out.reserve(size);
  for (const auto& [marker, text] : inserts) {
    const auto at = page.find(marker);
    // Only an edit of report.html gets here, and every report test fails on it.
    if (at == std::string_view::npos)
      throw std::logic_error("report.html lacks the marker \"" + std::string(marker) + "\" (or has it out of order)");
    out.append(page.substr(0, at)).append(text);
    page.remove_prefix(at + marker.size());
  }
  out += page;
  return out;
}

}  // namespace

std::int64_t OperatorStats::total_ns() const noexcept {
  std::int64_t total = 0;
  for (const auto& [variant, v] : variants) total += v.total_ns;
  return total;
}

namespace {
std::optional<double> speedup(const OperatorStats& op, const std::string& against) {
  const auto cpu = op.variants.find("cpu");
  const auto other = op.variants.find(against);
  if (cpu == op.variants.end() || other == op.variants.end()) return std::nullopt;
  if (cpu->second.count == 0 || other->second.count == 0 || other->second.mean_ns() <= 0) return std::nullopt;
  return cpu->second.mean_ns() / other->second.mean_ns();
}
}  // namespace

std::optional<double> OperatorStats::speedup_gpu() const { return speedup(*this, "gpu"); }
std::optional<double> OperatorStats::speedup_sim() const { return speedup(*this, "sim"); }

double TransferStats::bandwidth() const noexcept {
  return busy_ns > 0 ? static_cast<double>(bytes) / (static_cast<double>(busy_ns) * 1e-9) : 0.0;
}

std::vector<Track> report_tracks(const RunTrace& t) {
  std::vector<Track> all = t.tracks;
  std::unordered_set<int> known;
  for (const auto& tr : all) known.insert(tr.id);
  std::vector<int> missing;
  for (const auto& s : t.spans)
    if (known.insert(s.track).second) missing.push_back(s.track);
  std::sort(missing.begin(), missing.end());
  for (int id : missing) all.push_back({id, "track " + std::to_string(id), "", false});

  // A copy track goes right after the device it serves, so a GPU's compute and
  // its copies are read together.
  std::vector<Track> out;
  std::vector<bool> placed(all.size(), false);
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (all[i].kind == "copy") continue;
    out.push_back(all[i]);
    placed[i] = true;
    for (std::size_t j = 0; j < all.size(); ++j)
      if (!placed[j] && all[j].kind == "copy" && all[j].name == all[i].name + " copy") {
        out.push_back(all[j]);
        placed[j] = true;
      }
  }
  for (std::size_t i = 0; i < all.size(); ++i)
    if (!placed[i]) out.push_back(all[i]);
  return out;
}

ReportSummary summarize(const RunTrace& t) {
  ReportSummary r;
  r.duration_ns = std::max<std::int64_t>(0, t.duration_ns);
  for (const auto& s : t.spans) r.duration_ns = std::max(r.duration_ns, s.end_ns);

  std::map<std::pair<std::string, bool>, OperatorStats> ops;
  std::unordered_map<int, std::vector<Interval>> busy;
  std::unordered_map<int, std::int64_t> count;
  std::map<std::pair<int, std::string>, std::pair<TransferStats, std::vector<Interval>>> copies;
  for (const auto& s : t.spans) {
    busy[s.track].emplace_back(s.start_ns, s.end_ns);
    ++count[s.track];
    if (s.failed) ++r.failed;
    if (is_copy(s)) {
      ++r.copies;
      auto& [x, iv] = copies[{s.track, s.name}];
      x.track = s.track;
      x.direction = s.name;
      ++x.count;
      x.bytes += s.bytes;
      iv.emplace_back(s.start_ns, s.end_ns);
      continue;
    }
    ++r.tasks;
    OperatorStats& op = ops[{s.name, s.parent >= 0}];
    op.name = s.name;
    op.subtasks = s.parent >= 0;
    VariantStats& v = op.variants[s.variant];
    ++v.count;
    v.total_ns += length_ns(s);
    if (s.failed) ++op.failed;
  }
  for (auto& [key, op] : ops) r.operators.push_back(std::move(op));

  const std::vector<Track> order = report_tracks(t);
  std::unordered_map<int, std::size_t> position;
  for (std::size_t i = 0; i < order.size(); ++i) position.emplace(order[i].id, i);
  for (const auto& tr : order) {
    TrackUsage u;
    u.track = tr.id;
    if (auto it = busy.find(tr.id); it != busy.end()) {
      u.spans = count[tr.id];
      u.busy_ns = union_ns(std::move(it->second));
    }
    u.utilization = r.duration_ns > 0 ? static_cast<double>(u.busy_ns) / static_cast<double>(r.duration_ns) : 0.0;
    r.tracks.push_back(u);
  }
  for (auto& [key, entry] : copies) {
    entry.first.busy_ns = union_ns(std::move(entry.second));
    r.transfers.push_back(std::move(entry.first));
  }
  std::stable_sort(r.transfers.begin(), r.transfers.end(), [&](const TransferStats& a, const TransferStats& b) {
    const auto pa = position.at(a.track), pb = position.at(b.track);
    if (pa != pb) return pa < pb;
    const int da = direction_rank(a.direction), db = direction_rank(b.direction);
    return da != db ? da < db : a.direction < b.direction;
  });
  return r;
}

Json report_data(const RunTrace& t) {
  const std::vector<Track> order = report_tracks(t);
  std::unordered_map<int, int> row_of;
  Json tracks = Json::array();
  for (std::size_t i = 0; i < order.size(); ++i) {
    row_of.emplace(order[i].id, static_cast<int>(i));
    tracks.push_back({{"id", order[i].id}, {"name", order[i].name}, {"kind", order[i].kind}, {"simulated", order[i].simulated}});
  }

  // Columns rather than one object per span: a 100 000-span run stays a few
  // megabytes and the page walks plain arrays.
  Interner names, stages, variants;
  Json track = Json::array(), name = Json::array(), stage = Json::array(), key = Json::array(), variant = Json::array(),
       start = Json::array(), dur = Json::array(), bytes = Json::array(), id = Json::array(), parent = Json::array(),
       failed = Json::array();
  for (const auto& s : t.spans) {
    track.push_back(row_of.at(s.track));
    name.push_back(names(s.name));
    stage.push_back(stages(s.stage));
    key.push_back(s.key);
    variant.push_back(variants(s.variant));
    start.push_back(s.start_ns);
    dur.push_back(length_ns(s));
    bytes.push_back(s.bytes);
    id.push_back(s.id);
    parent.push_back(s.parent);
    failed.push_back(s.failed ? 1 : 0);
  }
  Json spans = {{"names", names.take()}, {"stages", stages.take()}, {"variants", variants.take()},
                {"track", std::move(track)}, {"name", std::move(name)}, {"stage", std::move(stage)},
                {"key", std::move(key)}, {"variant", std::move(variant)}, {"start", std::move(start)},
                {"dur", std::move(dur)}, {"bytes", std::move(bytes)}, {"id", std::move(id)},
                {"parent", std::move(parent)}, {"failed", std::move(failed)}};

  // Counters grouped by name in order of first appearance, each in time order.
  std::vector<std::string> counter_names;
  std::unordered_map<std::string, std::vector<const Counter*>> by_name;
  for (const auto& c : t.counters) {
    auto [it, added] = by_name.try_emplace(c.name);
    if (added) counter_names.push_back(c.name);
    it->second.push_back(&c);
  }
  Json counters = Json::array();
  for (const auto& n : counter_names) {
    auto& list = by_name[n];
    std::stable_sort(list.begin(), list.end(), [](const Counter* a, const Counter* b) { return a->t_ns < b->t_ns; });
    Json ts = Json::array(), vs = Json::array();
    for (const Counter* c : list) {
      ts.push_back(c->t_ns);
      vs.push_back(c->value);
    }
    counters.push_back({{"name", n}, {"t", std::move(ts)}, {"v", std::move(vs)}});
  }

  return {{"format", 1},
          {"duration_ns", t.duration_ns},
          {"config", t.config},
          {"tracks", std::move(tracks)},
          {"spans", std::move(spans)},
          {"counters", std::move(counters)},
          {"summary", summary_json(summarize(t), row_of)}};
}

// All text the page shows from the run is set through textContent by
// report.js, never parsed as HTML; script_safe_json keeps the data inside its
// <script> element.
std::string html_report(const RunTrace& t) {
  const std::string data = script_safe_json(report_data(t));
  return fill(report_assets::html(),
              {{css_marker, report_assets::css()},
               {data_marker, data},
               {base_js_marker, report_assets::base_js()},
               {js_marker, report_assets::js()}});
}

void write_html_report(const RunTrace& t, const std::filesystem::path& file) {
  const std::string page = html_report(t);
  try {
    if (file.has_parent_path()) std::filesystem::create_directories(file.parent_path());
    write_file_atomic(file, page);
  } catch (const std::filesystem::filesystem_error& e) {
    throw Error("cannot write the HTML report " + file.string() + ": " + e.code().message());
  } catch (const Error& e) {
    throw Error("cannot write the HTML report " + file.string() + ": " + e.what());
  }
}

}  // namespace flowd::trace
