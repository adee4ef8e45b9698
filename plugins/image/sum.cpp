#include "sum.hpp"

#include <algorithm>

namespace flowd::image {

OperatorSpec Sum::spec() {
  return {.name = "image.sum",
          .doc = "Element-wise sum of every array on the input (all of one shape), as f64. Items are merged in any "
                 "order, in parallel partial sums.",
          .inputs = {{"array", "array", "arrays of identical shape"}},
          .outputs = {{"sum", "array<f64>", "the element-wise sum"}},
          .params = {}};
}

namespace {
template <class T> void widen(const Array& in, double* out) {
  const auto v = in.values<T>();
  std::copy(v.begin(), v.end(), out);
}
}  // namespace

Item Sum::lift(ReduceContext&, const Item& in) const {
  const Array a = in.array().contiguous();
  Array out = Array::uninitialized(DType::f64, a.shape());
  double* o = out.data<double>();
  switch (a.dtype()) {
    case DType::u8: widen<std::uint8_t>(a, o); break;
    case DType::i8: widen<std::int8_t>(a, o); break;
    case DType::u16: widen<std::uint16_t>(a, o); break;
    case DType::i16: widen<std::int16_t>(a, o); break;
    case DType::u32: widen<std::uint32_t>(a, o); break;
    case DType::i32: widen<std::int32_t>(a, o); break;
    case DType::u64: widen<std::uint64_t>(a, o); break;
    case DType::i64: widen<std::int64_t>(a, o); break;
    case DType::f32: widen<float>(a, o); break;
    case DType::f64: widen<double>(a, o); break;
  }
  // The sum describes the whole stream, not the first item: fresh metadata
  // counting how many items it holds (the engine names it after the stage).
  ItemMeta meta;
  meta.attrs["items"] = 1;
  return Item{std::move(meta), Value(std::move(out))};
}

Item Sum::merge(ReduceContext&, Item acc, const Item& other) const {
  const Array& b = other.array();
  auto a = std::get<Array>(acc.value);
  if (!std::equal(a.shape().begin(), a.shape().end(), b.shape().begin(), b.shape().end()))
    throw Error("image.sum: '" + other.meta.key + "' is " + b.describe() + " but the sum so far is " + a.describe());
  auto x = a.values<double>();
  const auto y = b.values<double>();
  for (std::size_t i = 0; i < x.size(); ++i) x[i] += y[i];
  acc.meta.attrs["items"] = acc.meta.attrs.value("items", 0) + other.meta.attrs.value("items", 0);
  return acc;
}

}  // namespace flowd::image
