#pragma once
// flowd::Array: a reference-counted, typed, strided n-d array.
//
// Copies are shallow (they share the bytes, like cv::Mat or a numpy view);
// clone() makes a deep copy. Inputs handed to an operator are shared with
// other consumers, so an operator must never write through a copy of an input.
// Strides are in elements, not bytes: every dtype is naturally aligned, so a
// byte stride that is not a multiple of the element size cannot occur.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <new>
#include <span>
#include <string>

#include "flowd/dtype.hpp"
#include "flowd/error.hpp"

namespace flowd {

// Where the bytes of an array live. Operators receive arrays where their
// variant runs (host for cpu, device for gpu); the engine moves them.
enum class Residency : std::uint8_t { host, pinned_host, device };

struct Placement {
  Residency residency = Residency::host;
  int device = -1;  // GPU ordinal when residency == device

  bool host_accessible() const noexcept { return residency != Residency::device; }
  friend bool operator==(const Placement&, const Placement&) = default;
};

inline constexpr int max_ndim = 8;

class Array {
public:
  using Dims = std::array<std::int64_t, max_ndim>;

  Array() = default;

  // Host array, 64-byte aligned, contents uninitialised.
  static Array uninitialized(DType dtype, std::span<const std::int64_t> shape) {
    Array a;
    a.set_shape(dtype, shape);
    const std::size_t bytes = std::max<std::size_t>(1, a.nbytes());
    void* p = ::operator new(bytes, std::align_val_t{64});
    a.owner_ = std::shared_ptr<void>(p, [](void* q) { ::operator delete(q, std::align_val_t{64}); });
    a.data_ = static_cast<std::byte*>(p);
    return a;
  }
  static Array uninitialized(DType dtype, std::initializer_list<std::int64_t> shape) {
    return uninitialized(dtype, std::span<const std::int64_t>(shape.begin(), shape.size()));
  }
  static Array zeros(DType dtype, std::span<const std::int64_t> shape) {
    Array a = uninitialized(dtype, shape);
    std::memset(a.data_, 0, a.nbytes());
    return a;
  }
  static Array zeros(DType dtype, std::initializer_list<std::int64_t> shape) {
    return zeros(dtype, std::span<const std::int64_t>(shape.begin(), shape.size()));
  }

  // Wraps memory owned elsewhere (a cv::Mat, a device pool block, a mapped
  // file). `owner` keeps it alive; strides default to C order.
  static Array adopt(std::shared_ptr<void> owner, void* data, DType dtype, std::span<const std::int64_t> shape,
                     std::span<const std::int64_t> strides = {}, Placement where = {}) {
    Array a;
    a.set_shape(dtype, shape);
    if (!strides.empty()) {
      if (strides.size() != shape.size()) throw Error("Array::adopt: strides and shape differ in length");
      for (std::size_t i = 0; i < strides.size(); ++i) a.strides_[i] = strides[i];
    }
    a.owner_ = std::move(owner);
    a.data_ = static_cast<std::byte*>(data);
    a.placement_ = where;
    return a;
  }

  bool empty() const noexcept { return data_ == nullptr; }
  DType dtype() const noexcept { return dtype_; }
  int ndim() const noexcept { return ndim_; }
  std::span<const std::int64_t> shape() const noexcept { return {shape_.data(), static_cast<std::size_t>(ndim_)}; }
  std::span<const std::int64_t> strides() const noexcept { return {strides_.data(), static_cast<std::size_t>(ndim_)}; }
  // Checked, and cheap enough for inner loops: the throw is out of line.
  std::int64_t shape(int d) const {
    if (d < 0 || d >= ndim_) [[unlikely]] bad_dim(d);
    return shape_[static_cast<std::size_t>(d)];
  }
  std::int64_t stride(int d) const {
    if (d < 0 || d >= ndim_) [[unlikely]] bad_dim(d);
    return strides_[static_cast<std::size_t>(d)];
  }
  std::int64_t numel() const noexcept {
    std::int64_t n = 1;
    for (int d = 0; d < ndim_; ++d) n *= shape_[d];
    return n;
  }
  std::size_t itemsize() const noexcept { return size_of(dtype_); }
  std::size_t nbytes() const noexcept { return static_cast<std::size_t>(numel()) * itemsize(); }
  const Placement& placement() const noexcept { return placement_; }

  bool is_contiguous() const noexcept {
    std::int64_t expect = 1;
    for (int d = ndim_ - 1; d >= 0; --d) {
      if (shape_[d] != 1 && strides_[d] != expect) return false;
      expect *= shape_[d];
    }
    return true;
  }

  // Untyped access; the typed accessors below check dtype and residency.
  const void* raw() const noexcept { return data_; }
  void* raw() noexcept { return data_; }
  // The shared owner, for code that needs to keep the bytes alive itself.
  const std::shared_ptr<void>& owner() const noexcept { return owner_; }

  template <class T> const T* data() const { check_access<T>(); return reinterpret_cast<const T*>(data_); }
  template <class T> T* data() { check_access<T>(); return reinterpret_cast<T*>(data_); }

  // All elements in C order; requires a contiguous host array.
  template <class T> std::span<const T> values() const {
    check_contiguous();
    return {data<T>(), static_cast<std::size_t>(numel())};
  }
  template <class T> std::span<T> values() {
    check_contiguous();
    return {data<T>(), static_cast<std::size_t>(numel())};
  }

  template <class T, class... I> const T& at(I... index) const { return data<T>()[offset(index...)]; }
  template <class T, class... I> T& at(I... index) { return data<T>()[offset(index...)]; }

  // A view of [begin, end) along one dimension, sharing the bytes.
  Array slice(int dim, std::int64_t begin, std::int64_t end) const {
    check_dim(dim);
    if (begin < 0 || end > shape_[dim] || begin > end)
      throw Error("Array::slice: [" + std::to_string(begin) + ", " + std::to_string(end) + ") outside dimension " +
                  std::to_string(dim) + " of size " + std::to_string(shape_[dim]));
    Array v = *this;
    v.data_ += static_cast<std::ptrdiff_t>(begin * strides_[dim]) * static_cast<std::ptrdiff_t>(itemsize());
    v.shape_[dim] = end - begin;
    return v;
  }

  // Deep copy into a new contiguous host array.
  Array clone() const {
    if (!placement_.host_accessible()) throw Error("Array::clone: array lives on device " + std::to_string(placement_.device));
    Array out = uninitialized(dtype_, shape());
    if (is_contiguous()) {
      if (nbytes() != 0) std::memcpy(out.data_, data_, nbytes());
      return out;
    }
    // The trailing dimensions that are laid out contiguously form one run,
    // copied with one memcpy (a tile cut from a larger image: one run per
    // row, not one call per byte).
    int run_dim = ndim_;
    std::int64_t run = 1;
    while (run_dim > 0 && (shape_[run_dim - 1] == 1 || strides_[run_dim - 1] == run)) {
      --run_dim;
      run *= shape_[run_dim];
    }
    std::int64_t cursor = 0;
    copy_strided(out.data_, 0, 0, cursor, run_dim, run);
    return out;
  }
  // This array if already contiguous, else a contiguous copy.
  Array contiguous() const { return is_contiguous() ? *this : clone(); }

  // "u8[512x512x3]"
  std::string describe() const {
    std::string s(name_of(dtype_));
    s += '[';
    for (int d = 0; d < ndim_; ++d) s += (d ? "x" : "") + std::to_string(shape_[d]);
    return s + ']';
  }

private:
  void set_shape(DType dtype, std::span<const std::int64_t> shape) {
    if (shape.size() > static_cast<std::size_t>(max_ndim))
      throw Error("Array: " + std::to_string(shape.size()) + " dimensions; at most " + std::to_string(max_ndim));
    dtype_ = dtype;
    ndim_ = static_cast<int>(shape.size());
    std::int64_t stride = 1;
    for (int d = ndim_ - 1; d >= 0; --d) {
      if (shape[d] < 0) throw Error("Array: negative extent in dimension " + std::to_string(d));
      shape_[d] = shape[d];
      strides_[d] = stride;
      stride *= shape[d];
    }
  }
  [[noreturn, gnu::cold, gnu::noinline]] void bad_dim(int d) const {
    throw Error("Array: dimension " + std::to_string(d) + " of a " + std::to_string(ndim_) + "-d array");
  }
  int check_dim(int d) const {
    if (d < 0 || d >= ndim_) [[unlikely]] bad_dim(d);
    return d;
  }
  template <class T> void check_access() const {
    if (dtype_of<T> != dtype_)
      throw Error("Array: accessed as " + std::string(name_of(dtype_of<T>)) + " but holds " + describe());
    if (!placement_.host_accessible())
      throw Error("Array: host access to an array on device " + std::to_string(placement_.device));
  }
  void check_contiguous() const {
    if (!is_contiguous()) throw Error("Array: values() needs a contiguous array; call contiguous() first");
  }
  template <class... I> std::int64_t offset(I... index) const {
    static_assert(sizeof...(I) <= max_ndim);
    if (static_cast<int>(sizeof...(I)) != ndim_)
      throw Error("Array::at: " + std::to_string(sizeof...(I)) + " indices for a " + std::to_string(ndim_) + "-d array");
    const std::int64_t idx[] = {static_cast<std::int64_t>(index)...};
    std::int64_t off = 0;
    for (int d = 0; d < ndim_; ++d) off += idx[d] * strides_[d];
    return off;
  }
  // Copies in C order into `out`, advancing `cursor` (elements written);
  // dimensions from `run_dim` on are one contiguous run of `run` elements.
  void copy_strided(std::byte* out, int dim, std::int64_t src_off, std::int64_t& cursor, int run_dim,
                    std::int64_t run) const {
    const std::size_t isz = itemsize();
    if (dim == run_dim) {
      std::memcpy(out + static_cast<std::size_t>(cursor) * isz, data_ + static_cast<std::size_t>(src_off) * isz,
                  static_cast<std::size_t>(run) * isz);
      cursor += run;
      return;
    }
    for (std::int64_t i = 0; i < shape_[dim]; ++i)
      copy_strided(out, dim + 1, src_off + i * strides_[dim], cursor, run_dim, run);
  }

  std::shared_ptr<void> owner_;
  std::byte* data_ = nullptr;
  DType dtype_ = DType::u8;
  int ndim_ = 0;
  Dims shape_{};
  Dims strides_{};
  Placement placement_{};
};

}  // namespace flowd
