#pragma once
// SHA-256 (FIPS 180-4), for workflow hashes in provenance records.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace flowd {

class Sha256 {
public:
  Sha256();
  void update(std::string_view bytes);
  std::array<std::uint8_t, 32> finish();
  static std::string hex(std::string_view bytes);

private:
  void block(const std::uint8_t* p);
  std::array<std::uint32_t, 8> h_;
  std::array<std::uint8_t, 64> buf_{};
  std::size_t used_ = 0;
  std::uint64_t total_ = 0;
};

}  // namespace flowd
