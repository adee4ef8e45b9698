#pragma once
#include <memory>
#include <mutex>
#include <optional>

#include <flowd/flowd.hpp>

#include "fft.hpp"
#include "ops/images.hpp"
#include "ops/method.hpp"

namespace flowd::prnu {

// prnu.compare (all pairs): NCC and PCE of every pair of one set of photos
// (i < j), or of fingerprints × photos. An item is a photo's file, an image
// array, or a pattern already (a fingerprint or a prnu.extract residual):
// load decodes the photo, preprocess extracts its residual, which the
// engine caches; compare is the cheap part.
//
// The GPU variant (compare_gpu.cpp, built only with CUDA; flowd/gpu.hpp):
// NCC and PCE on cuFFT over patterns the engine keeps in GPU memory, and
// the NFI residual on the GPU (the wavelet residual has no GPU twin yet, so
// with method=wavelet preprocess runs on the CPU). Not final: registration
// derives from it to add the variant.
class Compare : public AllPairs {
public:
  static OperatorSpec spec();
  explicit Compare(const Params& p);
  std::vector<std::string> scores() const override { return {"ncc", "pce"}; }
  Item load(AllPairsContext& ctx, const Item& in) const override;
  Item preprocess(AllPairsContext& ctx, Item loaded) const override;
  void compare(AllPairsContext& ctx, const Item& a, const Item& b, std::span<double> scores) const override;
  void compare_gpu(GpuAllPairsContext& ctx, const Item& a, const Item& b, std::span<double> scores) const;
  std::optional<Item> preprocess_gpu(GpuAllPairsContext& ctx, const Item& loaded) const;

private:
  // What preprocess() does to a photo before its residual: its pixels as a
  // float image, turned and cropped; nullopt for an item that is a pattern
  // already.
  std::optional<Framed> framed_photo(const Item& loaded) const;
  std::string what_of(const Item& loaded) const;

  Method method_;
  int crop_;
  int search_;
  bool try_turns_;
  mutable FftPlans plans_;
  // cuFFT plans and scratch per GPU (compare_gpu.cpp), made on first use.
  struct GpuState;
  GpuState& gpu_state() const;
  mutable std::mutex gpu_m_;
  mutable std::shared_ptr<GpuState> gpu_;
};

}  // namespace flowd::prnu
