#pragma once
// A simulated GPU's memory: nothing moves, but each transfer takes the time
// it would take at `bytes_per_second` (sleeping, so experiments are not
// bound by the machine's cores).
#include "memory/device.hpp"

namespace flowd::memory {

class SimDevice final : public Device {
public:
  SimDevice(int index, double bytes_per_second) : index_(index), bandwidth_(bytes_per_second) {}

  std::string name() const override { return "sim" + std::to_string(index_); }
  bool simulated() const noexcept override { return true; }
  int ordinal() const noexcept override { return index_; }
  Array upload(const Array& host) override;
  Array download(const Array& on_device) override;
  Array pin(const Array& host_array) override { return host_array; }
  Array allocate(DType dtype, std::span<const std::int64_t> shape) override;
  void* compute_stream() noexcept override { return nullptr; }
  void synchronize() override {}

  double bandwidth() const noexcept { return bandwidth_; }
  double seconds_for(std::size_t bytes) const noexcept { return static_cast<double>(bytes) / bandwidth_; }

private:
  int index_;
  double bandwidth_;
};

}  // namespace flowd::memory
