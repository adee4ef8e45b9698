#pragma once
#include <flowd/flowd.hpp>

#include "fft.hpp"
#include "ops/method.hpp"

namespace flowd::prnu {

// prnu.compare (all pairs): NCC and PCE of every pair of one set of photos
// (i < j), or of fingerprints × photos. An item is a photo's file, an image
// array, or a pattern already (a fingerprint or a prnu.extract residual):
// load decodes the photo, preprocess extracts its residual, which the
// engine caches; compare is the cheap part.
class Compare final : public AllPairs {
public:
  static OperatorSpec spec();
  explicit Compare(const Params& p);
  std::vector<std::string> scores() const override { return {"ncc", "pce"}; }
  Item load(AllPairsContext& ctx, const Item& in) const override;
  Item preprocess(AllPairsContext& ctx, Item loaded) const override;
  void compare(AllPairsContext& ctx, const Item& a, const Item& b, std::span<double> scores) const override;

private:
  Method method_;
  int crop_;
  int search_;
  bool try_turns_;
  mutable FftPlans plans_;
};

}  // namespace flowd::prnu
