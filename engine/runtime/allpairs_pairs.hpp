#pragma once
// What an all-pairs stage does with items and pairs wherever its leaves run:
// in the run's own process (allpairs_stage.cpp) or as a job on a cluster
// worker node (allpairs_job.cpp).
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "flowd/item.hpp"
#include "flowd/operator.hpp"
#include "sched/allpairs_plan.hpp"
#include "util/log.hpp"
#include "workflow/graph.hpp"

namespace flowd::runtime {
struct Inputs;  // runtime/contexts.hpp
}

namespace flowd::runtime::detail {

const char* shape_name(sched::PairShape s);

// The Hilbert plan of a matrix run on `lanes` lanes: leaves of `leaf_pairs`
// pairs when the workflow gives that, else of a size that gives each lane
// at least 8 leaves to run and to steal.
sched::PairPlan hilbert_plan(sched::PairShape shape, std::uint32_t rows, std::uint32_t cols,
                             std::uint64_t leaf_pairs, int lanes);
// Rocket's leaves hold a few hundred pairs (at least 8 per lane).
std::uint64_t default_leaf_pairs(std::uint64_t total, int lanes);

// ℓ(x) = preprocess(load(x)) of the stage's operator.
Item load_preprocessed(const workflow::StageNode& node, const Item& raw, Logger& log, const std::atomic<bool>& stop);

// One lane's pairs in the order it computed them.
struct LaneRows {
  std::vector<std::int64_t> a, b;
  std::vector<double> scores;  // `nscores` per pair
};

// Computes a pair's scores in place of the operator's compare (its GPU
// variant, allpairs_gpu.cpp).
using CompareFn = std::function<void(const Inputs& inputs, std::span<double> scores)>;

// f(a, b) (compare, or `other` where given, then postprocess) appended to
// `out`; an error names both items' keys and is charged to row_key.
void compare_pair(const workflow::StageNode& node, Logger& log, const std::atomic<bool>& stop, std::size_t nscores,
                  LaneRows& out, std::int64_t i, std::int64_t j, const Item& a, const Item& b,
                  const std::string& row_key, const std::string& col_key, const CompareFn& other = {});

// Every lane's pairs as one table, in (a, b) order: a, b and one f64 column
// per score name. Empties `lanes`.
Table pair_table(std::vector<LaneRows>& lanes, const std::vector<std::string>& names);

// --keep-going (issue 38): an item whose load fails is a failed item, and
// the matrix is that of the others, not no matrix at all. The load returns a
// marker in place of the item (a cache may hold it, a lane is never given
// it: compare skips every pair it is in), and the failures are kept here,
// by the item's number in the stage (rows first, then a rectangle's
// columns), so that no item is loaded, failed and reported twice.
struct FailedLoad {
  std::string key;
  std::string error;
};
class FailedLoads {
public:
  bool contains(std::uint64_t item) const;
  // False when `item` had failed already.
  bool add(std::uint64_t item, FailedLoad failure);
  std::map<std::uint64_t, FailedLoad> all() const;
  bool empty() const;

private:
  mutable std::mutex m_;
  std::map<std::uint64_t, FailedLoad> items_;
};
Item failed_load_marker(const std::string& key);
bool is_failed_load(const Item& item) noexcept;

// The pair table and the stage's keys without the failed items: pairs
// naming one are dropped, and the indices renumbered among the rest (rows
// among rows, a rectangle's columns among columns), as if the failed items
// had never arrived. `n_rows` items are rows; in a rectangle the items from
// n_rows on are its columns.
void drop_failed(Table& table, std::vector<std::string>& row_keys, std::vector<std::string>& col_keys,
                 const std::map<std::uint64_t, FailedLoad>& failed, std::uint64_t n_rows, bool rectangle);

}  // namespace flowd::runtime::detail
