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

}  // namespace flowd::runtime::detail
