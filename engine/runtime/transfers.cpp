#include "runtime/transfers.hpp"

namespace flowd::runtime {

void Transfers::record(int device_worker, bool upload, const Carried& c, std::size_t bytes, std::int64_t t0,
                       std::int64_t t1) {
  (upload ? up_ : down_).fetch_add(bytes);
  const memory::Device& dev = *devices_[static_cast<std::size_t>(device_worker)];
  if (!dev.simulated() && t1 > t0)
    model_.record_transfer(dev.ordinal(), upload ? sched::Direction::to_device : sched::Direction::to_host, bytes,
                           static_cast<double>(t1 - t0) * 1e-9);
  if (trace_.enabled())
    trace_.span({copy_track(device_worker), upload ? "upload" : "download", "", c.item.meta.key, "copy", t0, t1, bytes});
}

// With c.where locked: a host array for the item, downloading it from a
// device that holds it when host memory does not.
Array Transfers::host_copy_locked(const Carried& c, double& seconds) {
  const Array& value = std::get<Array>(c.item.value);
  if (c.where.valid(memory::host)) return c.where.copy(memory::host).value_or(value);
  const int from = c.where.device_holder();
  if (from == memory::host) throw Error("item '" + c.item.meta.key + "' is valid nowhere");
  memory::Device& dev = *devices_[static_cast<std::size_t>(from)];
  const auto on_dev = c.where.copy(from).value_or(value);
  const std::int64_t t0 = trace_.now();
  Array host = dev.download(on_dev);
  const std::int64_t t1 = trace_.now();
  seconds += static_cast<double>(t1 - t0) * 1e-9;
  record(from, false, c, host.nbytes(), t0, t1);
  // A simulated device shares the item's array: no separate host copy.
  if (dev.simulated()) c.where.set(memory::host);
  else c.where.set(memory::host, host);
  return host;
}

const Item& Transfers::to(const Carried& c, int to_worker, Item& scratch, double* seconds) {
  double moved = 0;
  const Array* value = std::get_if<Array>(&c.item.value);
  // Tables and JSON values live in host memory and every worker reads them there.
  if (!value) return c.item;
  std::lock_guard lk(c.where.mutex());
  const Item* result = &c.item;
  if (to_worker == memory::host) {
    const Array host = host_copy_locked(c, moved);
    if (host.raw() != value->raw()) {
      scratch = Item{c.item.meta, host};
      result = &scratch;
    }
  } else {
    memory::Device& dev = *devices_[static_cast<std::size_t>(to_worker)];
    if (c.where.valid(to_worker)) {
      if (auto copy = c.where.copy(to_worker); copy && copy->raw() != value->raw()) {
        scratch = Item{c.item.meta, *copy};
        result = &scratch;
      }
    } else {
      const Array host = host_copy_locked(c, moved);
      const std::int64_t t0 = trace_.now();
      Array on_dev = dev.upload(host);
      const std::int64_t t1 = trace_.now();
      moved += static_cast<double>(t1 - t0) * 1e-9;
      record(to_worker, true, c, host.nbytes(), t0, t1);
      if (dev.simulated()) {
        c.where.set(to_worker);
      } else {
        c.where.set(to_worker, on_dev);
        scratch = Item{c.item.meta, on_dev};
        result = &scratch;
      }
    }
  }
  if (seconds) *seconds += moved;
  return *result;
}

}  // namespace flowd::runtime
