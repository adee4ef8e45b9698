#pragma once
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include <flowd/flowd.hpp>

namespace flowd::cvtree {

// cvtree.compare (all pairs): for every pair of proteomes and each k, the
// cosine C of their composition vectors and the distance D = (1 − C) / 2.
// load reads and parses the file (or passes a vectors item on); preprocess
// builds the vectors, which the engine caches; compare is the sparse dot
// product. The GPU variant (compare_gpu.cpp, built only with CUDA) is the
// merge-path twin over vectors kept in GPU memory. Not final: registration
// derives from it to add the variant.
class Compare : public AllPairs {
public:
  static OperatorSpec spec();
  explicit Compare(const Params& p);
  std::vector<std::string> scores() const override;
  Item load(AllPairsContext& ctx, const Item& in) const override;
  Item preprocess(AllPairsContext& ctx, Item loaded) const override;
  void compare(AllPairsContext& ctx, const Item& a, const Item& b, std::span<double> scores) const override;
  void compare_gpu(GpuAllPairsContext& ctx, const Item& a, const Item& b, std::span<double> scores) const;

private:
  std::vector<int> ks_;
  // Scratch per GPU (compare_gpu.cpp), made on first use.
  struct GpuState;
  GpuState& gpu_state() const;
  mutable std::mutex gpu_m_;
  mutable std::shared_ptr<GpuState> gpu_;
};

}  // namespace flowd::cvtree
