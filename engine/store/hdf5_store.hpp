#pragma once
// An ItemStore that keeps items in one HDF5 file: for nodes whose items do
// not fit in memory, and for outputs that must survive the process (resume).
// Layout and guarantees: docs/stores.md.
#include <cstddef>
#include <filesystem>
#include <memory>
#include <vector>

#include "flowd/item.hpp"
#include "store/item_store.hpp"

namespace flowd::store {

// Thread-safe: every call holds one process-wide mutex, because HDF5 may be
// built without thread-safety and then no two calls into it may overlap,
// whichever file they touch. find() returns a fresh host copy; the file is
// not read again while a transfer sends from it.
//
// Durability: after put() or erase() returns, the change is on disk
// (H5Fflush, then fsync). A crash during put() leaves the item absent: it is
// written under /staging and linked into /items only when complete.
//
// One Hdf5ItemStore per file: HDF5 locks the file against other processes,
// and a second open in this process would share HDF5's file state.
class Hdf5ItemStore final : public store::NodeItemStore {
public:
  // Opens the store at `path`, creating it if missing. Items of an existing
  // store are available at once; debris of an interrupted put is dropped.
  explicit Hdf5ItemStore(std::filesystem::path path);
  ~Hdf5ItemStore() override;
  Hdf5ItemStore(const Hdf5ItemStore&) = delete;
  Hdf5ItemStore& operator=(const Hdf5ItemStore&) = delete;

  // Replaces an item stored under the same id. Arrays must be host
  // accessible; they are stored in C order whatever their strides.
  void put(const Item& item);
  // Under a name of the caller's (the item keeps its own metadata).
  void put(const wire::ItemId& name, const Item& item);
  void put(const wire::ItemId& name, std::shared_ptr<const Item> item) override { put(name, *item); }
  bool erase(const wire::ItemId& id) override;
  bool contains(const wire::ItemId& id) const;
  std::size_t size() const;
  // The ids of all stored items, in no particular order.
  std::vector<wire::ItemId> ids() const;

  std::shared_ptr<const Item> find(const wire::ItemId& id) const override;

  const std::filesystem::path& path() const noexcept { return path_; }

  // The link name of an item under /items: its key percent-encoded (HDF5
  // names cannot hold '/' and '.' is special), then version and timestamp.
  static std::string link_name(const wire::ItemId& id);

private:
  struct File;
  std::filesystem::path path_;
  std::unique_ptr<File> file_;
};

}  // namespace flowd::store
