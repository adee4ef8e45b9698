#include "runtime/allpairs_pairs.hpp"

#include <algorithm>

#include "flowd/error.hpp"
#include "runtime/contexts.hpp"

namespace flowd::runtime::detail {

const char* shape_name(sched::PairShape s) {
  return s == sched::PairShape::triangle                 ? "triangle"
         : s == sched::PairShape::triangle_with_diagonal ? "triangle-with-diagonal"
                                                         : "rectangle";
}

// Enough pairs for each lane to reuse a leaf's items across its rows, few
// enough that every lane has many leaves to steal.
std::uint64_t default_leaf_pairs(std::uint64_t total, int lanes) {
  return std::clamp<std::uint64_t>(total / (8 * static_cast<std::uint64_t>(std::max(lanes, 1))), 1, 256);
}

sched::PairPlan hilbert_plan(sched::PairShape shape, std::uint32_t rows, std::uint32_t cols,
                             std::uint64_t leaf_pairs, int lanes) {
  const std::uint64_t total = sched::pairs_in(shape, 0, rows, 0, cols);
  const std::uint64_t leaf = leaf_pairs ? leaf_pairs : default_leaf_pairs(total, lanes);
  auto plan = sched::plan_pairs(shape, rows, cols, leaf);
  // A quadrant is split only while every part keeps `leaf` pairs, and a
  // triangle's corners are small: halve the chosen size until each lane has
  // leaves to run and to steal (a size the workflow gives is kept).
  for (std::uint64_t t = leaf; !leaf_pairs && t > 1 && plan.leaves.size() < 8 * static_cast<std::size_t>(lanes);) {
    t /= 2;
    plan = sched::plan_pairs(shape, rows, cols, t);
  }
  return plan;
}

Item load_preprocessed(const workflow::StageNode& node, const Item& raw, Logger& log, const std::atomic<bool>& stop) {
  const auto& op = static_cast<const AllPairs&>(*node.op);
  const Inputs inputs{raw.meta.key, {&raw}};
  ReduceContextImpl ctx(node, &inputs, log, stop);
  return op.preprocess(ctx, op.load(ctx, raw));
}

void compare_pair(const workflow::StageNode& node, Logger& log, const std::atomic<bool>& stop, std::size_t nscores,
                  LaneRows& out, std::int64_t i, std::int64_t j, const Item& a, const Item& b,
                  const std::string& row_key, const std::string& col_key, const CompareFn& other) {
  const auto& op = static_cast<const AllPairs&>(*node.op);
  const std::size_t at = out.scores.size();
  out.scores.resize(at + nscores, 0.0);
  const std::span<double> sc(out.scores.data() + at, nscores);
  try {
    if (stop.load()) throw Error("the run is stopping");
    const Inputs inputs{a.meta.key, {&a, &b}};
    ReduceContextImpl ctx(node, &inputs, log, stop);
    if (other)
      other(inputs, sc);
    else
      op.compare(ctx, a, b, sc);
    op.postprocess(ctx, sc);
  } catch (const std::exception& e) {
    out.scores.resize(at);
    throw ItemError(row_key, "comparing '" + row_key + "' with '" + col_key + "': " + e.what());
  }
  out.a.push_back(i);
  out.b.push_back(j);
}

Table pair_table(std::vector<LaneRows>& lanes, const std::vector<std::string>& names) {
  Table table;
  auto& ca = table.add_column<std::int64_t>("a");
  auto& cb = table.add_column<std::int64_t>("b");
  std::vector<std::vector<double>*> cs;
  for (const auto& n : names) cs.push_back(&table.add_column<double>(n));
  const std::size_t nscores = names.size();
  struct Ref {
    std::uint32_t lane;
    std::size_t index;
  };
  std::vector<Ref> order;
  for (std::uint32_t l = 0; l < lanes.size(); ++l)
    for (std::size_t k = 0; k < lanes[l].a.size(); ++k) order.push_back({l, k});
  std::sort(order.begin(), order.end(), [&](const Ref& x, const Ref& y) {
    const auto& lx = lanes[x.lane];
    const auto& ly = lanes[y.lane];
    return std::pair(lx.a[x.index], lx.b[x.index]) < std::pair(ly.a[y.index], ly.b[y.index]);
  });
  ca.reserve(order.size());
  cb.reserve(order.size());
  for (auto* c : cs) c->reserve(order.size());
  for (const Ref& r : order) {
    const auto& l = lanes[r.lane];
    ca.push_back(l.a[r.index]);
    cb.push_back(l.b[r.index]);
    for (std::size_t k = 0; k < nscores; ++k) cs[k]->push_back(l.scores[r.index * nscores + k]);
  }
  lanes.clear();
  return table;
}

bool FailedLoads::contains(std::uint64_t item) const {
  std::lock_guard lk(m_);
  return items_.contains(item);
}

bool FailedLoads::add(std::uint64_t item, FailedLoad failure) {
  std::lock_guard lk(m_);
  return items_.emplace(item, std::move(failure)).second;
}

std::map<std::uint64_t, FailedLoad> FailedLoads::all() const {
  std::lock_guard lk(m_);
  return items_;
}

bool FailedLoads::empty() const {
  std::lock_guard lk(m_);
  return items_.empty();
}

namespace {
constexpr const char* failed_attr = "flowd.allpairs.load_failed";
}

Item failed_load_marker(const std::string& key) {
  Item m;
  m.meta.key = key;
  m.meta.attrs[failed_attr] = true;
  m.value = Json(nullptr);
  return m;
}

bool is_failed_load(const Item& item) noexcept {
  return item.meta.attrs.is_object() && item.meta.attrs.contains(failed_attr);
}

void drop_failed(Table& table, std::vector<std::string>& row_keys, std::vector<std::string>& col_keys,
                 const std::map<std::uint64_t, FailedLoad>& failed, std::uint64_t n_rows, bool rectangle) {
  if (failed.empty()) return;
  // new_index[i]: the item's number among those kept, or -1.
  auto renumber = [](std::size_t n, const std::vector<bool>& gone) {
    std::vector<std::int64_t> idx(n, -1);
    std::int64_t next = 0;
    for (std::size_t i = 0; i < n; ++i)
      if (!gone[i]) idx[i] = next++;
    return idx;
  };
  std::vector<bool> row_gone(row_keys.size(), false), col_gone(col_keys.size(), false);
  for (const auto& [item, f] : failed) {
    if (item < n_rows) {
      if (item < row_gone.size()) row_gone[item] = true;
      if (!rectangle && item < col_gone.size()) col_gone[item] = true;
    } else if (rectangle && item - n_rows < col_gone.size()) {
      col_gone[item - n_rows] = true;
    }
  }
  const auto rows = renumber(row_keys.size(), row_gone), cols = renumber(col_keys.size(), col_gone);
  auto& a = table.column<std::int64_t>("a");
  auto& b = table.column<std::int64_t>("b");
  std::vector<std::size_t> keep;
  for (std::size_t p = 0; p < a.size(); ++p) {
    const auto i = static_cast<std::size_t>(a[p]), j = static_cast<std::size_t>(b[p]);
    if (i < rows.size() && j < cols.size() && rows[i] >= 0 && cols[j] >= 0) keep.push_back(p);
  }
  Table out;
  for (const Column& c : table.columns()) {
    if (c.name == "a" || c.name == "b") {
      const auto& from = std::get<std::vector<std::int64_t>>(c.data);
      const auto& map = c.name == "a" ? rows : cols;
      auto& to = out.add_column<std::int64_t>(c.name);
      for (const std::size_t p : keep) to.push_back(map[static_cast<std::size_t>(from[p])]);
    } else {
      const auto& from = std::get<std::vector<double>>(c.data);
      auto& to = out.add_column<double>(c.name);
      for (const std::size_t p : keep) to.push_back(from[p]);
    }
  }
  table = std::move(out);
  auto erase = [](std::vector<std::string>& keys, const std::vector<bool>& gone) {
    std::vector<std::string> kept;
    for (std::size_t i = 0; i < keys.size(); ++i)
      if (!gone[i]) kept.push_back(std::move(keys[i]));
    keys = std::move(kept);
  };
  erase(row_keys, row_gone);
  erase(col_keys, col_gone);
}

}  // namespace flowd::runtime::detail
