#pragma once
// A thin RAII layer over HDF5's C API: identifiers that close themselves,
// errors turned into flowd::Error with HDF5's own explanation, and the few
// attribute and type helpers the io readers and writers share.
#include <hdf5.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "flowd/dtype.hpp"
#include "flowd/table.hpp"

namespace flowd::h5 {

// Owns one HDF5 identifier and releases it with the matching H5?close.
class Id {
public:
  using Closer = herr_t (*)(hid_t);

  Id() noexcept = default;
  Id(hid_t id, Closer closer) noexcept : id_(id), closer_(closer) {}
  ~Id() { reset(); }
  Id(Id&& o) noexcept : id_(o.id_), closer_(o.closer_) { o.id_ = H5I_INVALID_HID; }
  Id& operator=(Id&& o) noexcept {
    if (this != &o) {
      reset();
      id_ = o.id_;
      closer_ = o.closer_;
      o.id_ = H5I_INVALID_HID;
    }
    return *this;
  }
  Id(const Id&) = delete;
  Id& operator=(const Id&) = delete;

  operator hid_t() const noexcept { return id_; }  // NOLINT(google-explicit-constructor): passed to the C API everywhere
  bool valid() const noexcept { return id_ >= 0; }
  void reset() noexcept {
    if (id_ >= 0 && closer_) closer_(id_);
    id_ = H5I_INVALID_HID;
  }
  // Closes now and throws if HDF5 reports a failure (a file's last flush).
  void close(const std::string& what);

private:
  hid_t id_ = H5I_INVALID_HID;
  Closer closer_ = nullptr;
};

// Silences HDF5's printing of error stacks to stderr for its scope. The
// setting is per-thread state of the (thread-safe) library; it is restored on
// exit. Errors reach the user as flowd::Error instead.
class Quiet {
public:
  Quiet() noexcept;
  ~Quiet();
  Quiet(const Quiet&) = delete;
  Quiet& operator=(const Quiet&) = delete;

private:
  H5E_auto2_t func_ = nullptr;
  void* data_ = nullptr;
};

// HDF5's innermost message for the last failure on this thread; for a
// failed read or write of the file, the system's reason ("No space left on
// device").
std::string last_error();

// Keeps HDF5 from closing still-open files when the process exits. A file
// whose close failed (e.g. on a full disk) stays registered in HDF5 1.10
// after the library freed it, and the library's exit handler then crashes on
// it (HDFGroup/hdf5#2257, fixed in 1.14.1): a run that reported the failure
// cleanly would end in SIGSEGV. flowd closes every file it opens itself, so
// the handler has nothing to do. Must be called before any other HDF5 call
// (first thing in main).
void no_cleanup_at_exit();

// `id` when valid, else throws flowd::Error("<what>: <last_error()>").
Id check(hid_t id, Id::Closer closer, const std::string& what);
void check(herr_t status, const std::string& what);

// A new file that closes all its objects when it is closed
// (H5F_CLOSE_STRONG), so it is really closed before it is renamed or removed.
Id create_file(const std::filesystem::path& path);
Id open_file_read(const std::filesystem::path& path);

// Creates a group and any missing parents; with `track_order`, links are
// listed in creation order (h5py honours it).
Id create_group(hid_t loc, const std::string& path, bool track_order = false);

enum class ObjectType { none, group, dataset, other };
// What `path` (relative to `loc`, or absolute) names; none when any part of
// it does not exist.
ObjectType object_type(hid_t loc, const std::string& path);

// Link names in a group, in name order.
std::vector<std::string> link_names(hid_t group);

// Rows [at, at + n) of a 1-D dataset from or to memory of `type`.
void write_rows(hid_t dataset, hid_t type, hsize_t at, hsize_t n, const void* buf);
void read_rows(hid_t dataset, hid_t type, hsize_t at, hsize_t n, void* buf);

// Variable-length strings: what flowd writes (UTF-8) for every string. To
// read, use the file's character set: HDF5 does not convert between ASCII
// and UTF-8.
Id string_type(H5T_cset_t cset = H5T_CSET_UTF8);

void set_attr(hid_t obj, const char* name, const std::string& value);
void set_attr(hid_t obj, const char* name, std::int64_t value);
void set_attr(hid_t obj, const char* name, std::span<const std::int64_t> values);
void set_attr(hid_t obj, const char* name, const std::vector<std::string>& values);

std::optional<std::string> string_attr(hid_t obj, const char* name);
std::optional<std::int64_t> int_attr(hid_t obj, const char* name);
std::optional<std::vector<std::int64_t>> ints_attr(hid_t obj, const char* name);
std::optional<std::vector<std::string>> strings_attr(hid_t obj, const char* name);

// The predefined native type of a dtype (never closed).
hid_t native_type(DType t);
// The dtype whose native type matches an HDF5 integer or float type.
std::optional<DType> dtype_of(hid_t type);

// The native type of a numeric table column (never closed); string columns
// use string_type().
hid_t native_type(ColumnType t);
// u8, i32, i64, f32, f64 or (variable-length) string; nullopt otherwise.
std::optional<ColumnType> column_type_of(hid_t type);
// The table column type holding a dtype's values, if any.
std::optional<ColumnType> column_type_of(DType t);

// Frees variable-length strings HDF5 allocated during a read.
class StringBuffer {
public:
  explicit StringBuffer(std::size_t n) : p_(n, nullptr) {}
  ~StringBuffer();
  StringBuffer(const StringBuffer&) = delete;
  StringBuffer& operator=(const StringBuffer&) = delete;
  char** data() noexcept { return p_.data(); }
  std::string at(std::size_t i) const { return p_[i] ? std::string(p_[i]) : std::string(); }
  std::size_t size() const noexcept { return p_.size(); }

private:
  std::vector<char*> p_;
};

}  // namespace flowd::h5
