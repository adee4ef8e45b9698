#pragma once
// Element types of arrays and table columns.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <type_traits>

namespace flowd {

enum class DType : std::uint8_t { u8, i8, u16, i16, u32, i32, u64, i64, f32, f64 };
inline constexpr int dtype_count = 10;

constexpr std::size_t size_of(DType t) noexcept {
  switch (t) {
    case DType::u8: case DType::i8: return 1;
    case DType::u16: case DType::i16: return 2;
    case DType::u32: case DType::i32: case DType::f32: return 4;
    case DType::u64: case DType::i64: case DType::f64: return 8;
  }
  return 0;
}

constexpr std::string_view name_of(DType t) noexcept {
  constexpr std::string_view names[] = {"u8", "i8", "u16", "i16", "u32", "i32", "u64", "i64", "f32", "f64"};
  return names[static_cast<int>(t)];
}

constexpr std::optional<DType> parse_dtype(std::string_view s) noexcept {
  for (int i = 0; i < dtype_count; ++i)
    if (name_of(static_cast<DType>(i)) == s) return static_cast<DType>(i);
  return std::nullopt;
}

template <class T> struct dtype_traits;
template <> struct dtype_traits<std::uint8_t> { static constexpr DType value = DType::u8; };
template <> struct dtype_traits<std::int8_t> { static constexpr DType value = DType::i8; };
template <> struct dtype_traits<std::uint16_t> { static constexpr DType value = DType::u16; };
template <> struct dtype_traits<std::int16_t> { static constexpr DType value = DType::i16; };
template <> struct dtype_traits<std::uint32_t> { static constexpr DType value = DType::u32; };
template <> struct dtype_traits<std::int32_t> { static constexpr DType value = DType::i32; };
template <> struct dtype_traits<std::uint64_t> { static constexpr DType value = DType::u64; };
template <> struct dtype_traits<std::int64_t> { static constexpr DType value = DType::i64; };
template <> struct dtype_traits<float> { static constexpr DType value = DType::f32; };
template <> struct dtype_traits<double> { static constexpr DType value = DType::f64; };

template <class T> inline constexpr DType dtype_of = dtype_traits<std::remove_cv_t<T>>::value;

}  // namespace flowd
