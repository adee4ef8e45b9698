#pragma once
#include <flowd/flowd.hpp>

namespace flowd::image {

// Element-wise sum of equally shaped arrays, accumulated in f64 (exact for
// integer counts below 2^53), e.g. per-tile histograms into a global one.
class Sum final : public Reduce {
public:
  static OperatorSpec spec();
  explicit Sum(const Params&) {}
  Item lift(ReduceContext& ctx, const Item& in) const override;
  Item merge(ReduceContext& ctx, Item acc, const Item& other) const override;
};

}  // namespace flowd::image
