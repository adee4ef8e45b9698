#include "store/hdf5_store.hpp"

#include <fcntl.h>
#include <hdf5.h>
#include <unistd.h>

#include <algorithm>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "flowd/error.hpp"
#include "h5.hpp"
#include "store/durable.hpp"

namespace flowd::store {

namespace {

namespace fs = std::filesystem;
using wire::describe;

// HDF5 without thread-safety must never be entered by two threads at once,
// whichever file they use: one mutex for every store in the process.
std::mutex& hdf5_mutex() {
  static std::mutex m;
  return m;
}

constexpr const char* format_attr = "flowd_store";
constexpr const char* format_value = "items/1";
constexpr const char* items_group = "items";
constexpr const char* staging_group = "staging";
constexpr std::size_t target_chunk_bytes = 1u << 20;
// Strided arrays are copied to C order this many bytes at a time, so
// storing a view of a huge array does not need a second huge buffer.
constexpr std::size_t strided_block_bytes = 16u << 20;

using h5::Id;
using h5::last_error;

// Holds the HDF5 mutex and keeps HDF5 from printing its error stacks to
// stderr for the duration: failures reach the caller as flowd::Error.
class Session {
public:
  Session() : lock_(hdf5_mutex()) {}

private:
  std::lock_guard<std::mutex> lock_;  // taken before, released after the quiet scope
  h5::Quiet quiet_;
};

// What a failure is about: the file, and the item when there is one.
struct Ctx {
  const fs::path& path;
  std::string item;

  [[noreturn]] void fail(const std::string& what, bool hdf5 = true) const {
    std::string m = "item store '" + path.string() + "'";
    if (!item.empty()) m += ", " + item;
    m += ": " + what;
    if (hdf5) m += ": " + last_error();
    throw Error(m);
  }
  Id check(hid_t id, Id::Closer closer, const std::string& what) const {
    if (id < 0) fail(what);
    return Id(id, closer);
  }
  void check(herr_t status, const std::string& what) const {
    if (status < 0) fail(what);
  }
  bool exists(hid_t loc, const std::string& name) const {
    const htri_t e = H5Lexists(loc, name.c_str(), H5P_DEFAULT);
    if (e < 0) fail("cannot look up '" + name + "'");
    return e > 0;
  }
};

using h5::dtype_of;
using h5::native_type;

using h5::column_type_of;

DType dtype_of(ColumnType t) {
  switch (t) {
    case ColumnType::u8: return DType::u8;
    case ColumnType::i32: return DType::i32;
    case ColumnType::i64: return DType::i64;
    case ColumnType::f32: return DType::f32;
    case ColumnType::f64: return DType::f64;
    case ColumnType::string: break;
  }
  throw Error("string columns have no numeric dtype");
}

Id string_type(const Ctx& c) {
  Id t = c.check(H5Tcopy(H5T_C_S1), H5Tclose, "cannot create a string type");
  c.check(H5Tset_size(t, H5T_VARIABLE), "cannot create a string type");
  c.check(H5Tset_cset(t, H5T_CSET_UTF8), "cannot create a string type");
  return t;
}

Id scalar_space(const Ctx& c) { return c.check(H5Screate(H5S_SCALAR), H5Sclose, "cannot create a dataspace"); }

Id simple_space(const Ctx& c, const std::vector<hsize_t>& dims) {
  return c.check(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose,
                 "cannot create a dataspace");
}

// Variable-length strings end at the first NUL: refuse rather than truncate.
void check_text(const Ctx& c, const std::string& s, const std::string& what) {
  if (s.find('\0') != std::string::npos) c.fail(what + " contains a NUL character, which HDF5 strings cannot hold", false);
}

void set_attr(const Ctx& c, hid_t obj, const char* name, const std::string& value) {
  check_text(c, value, std::string("attribute '") + name + "'");
  Id type = string_type(c);
  Id space = scalar_space(c);
  Id a = c.check(H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT), H5Aclose,
                 std::string("cannot create attribute '") + name + "'");
  const char* p = value.c_str();
  c.check(H5Awrite(a, type, &p), std::string("cannot write attribute '") + name + "'");
}

void set_attr(const Ctx& c, hid_t obj, const char* name, const std::vector<std::int64_t>& values) {
  Id space = values.size() == 1 ? scalar_space(c) : simple_space(c, {values.size()});
  Id a = c.check(H5Acreate2(obj, name, H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT), H5Aclose,
                 std::string("cannot create attribute '") + name + "'");
  c.check(H5Awrite(a, H5T_NATIVE_INT64, values.data()), std::string("cannot write attribute '") + name + "'");
}

bool has_attr(const Ctx& c, hid_t obj, const char* name) {
  const htri_t e = H5Aexists(obj, name);
  if (e < 0) c.fail(std::string("cannot look up attribute '") + name + "'");
  return e > 0;
}

std::string string_attr(const Ctx& c, hid_t obj, const char* name) {
  Id a = c.check(H5Aopen(obj, name, H5P_DEFAULT), H5Aclose, std::string("cannot open attribute '") + name + "'");
  Id ftype = c.check(H5Aget_type(a), H5Tclose, std::string("cannot read the type of attribute '") + name + "'");
  if (H5Tget_class(ftype) != H5T_STRING || H5Tis_variable_str(ftype) <= 0)
    c.fail(std::string("attribute '") + name + "' is not a variable-length string", false);
  Id type = string_type(c);
  char* p = nullptr;
  c.check(H5Aread(a, type, &p), std::string("cannot read attribute '") + name + "'");
  std::string s = p ? p : "";
  H5free_memory(p);
  return s;
}

std::vector<std::int64_t> ints_attr(const Ctx& c, hid_t obj, const char* name) {
  Id a = c.check(H5Aopen(obj, name, H5P_DEFAULT), H5Aclose, std::string("cannot open attribute '") + name + "'");
  Id space = c.check(H5Aget_space(a), H5Sclose, std::string("cannot read attribute '") + name + "'");
  const hssize_t n = H5Sget_simple_extent_npoints(space);
  if (n < 0) c.fail(std::string("cannot read attribute '") + name + "'");
  std::vector<std::int64_t> v(static_cast<std::size_t>(n));
  c.check(H5Aread(a, H5T_NATIVE_INT64, v.data()), std::string("cannot read attribute '") + name + "'");
  return v;
}

std::int64_t int_attr(const Ctx& c, hid_t obj, const char* name) {
  const auto v = ints_attr(c, obj, name);
  if (v.size() != 1) c.fail(std::string("attribute '") + name + "' is not a single integer", false);
  return v[0];
}

// [ndim, origin..., extent...]: the leading ndim keeps a 0-d box non-empty.
void set_box(const Ctx& c, hid_t obj, const char* name, const Box& b) {
  std::vector<std::int64_t> v{b.ndim};
  for (int d = 0; d < b.ndim; ++d) v.push_back(b.origin[static_cast<std::size_t>(d)]);
  for (int d = 0; d < b.ndim; ++d) v.push_back(b.extent[static_cast<std::size_t>(d)]);
  set_attr(c, obj, name, v);
}

std::optional<Box> box_attr(const Ctx& c, hid_t obj, const char* name) {
  if (!has_attr(c, obj, name)) return std::nullopt;
  const auto v = ints_attr(c, obj, name);
  if (v.empty() || v[0] < 0 || v[0] > Box::max_dims || v.size() != 1 + 2 * static_cast<std::size_t>(v[0]))
    c.fail(std::string("attribute '") + name + "' is not a box", false);
  Box b;
  b.ndim = static_cast<int>(v[0]);
  for (std::size_t d = 0; d < static_cast<std::size_t>(b.ndim); ++d) {
    b.origin[d] = v[1 + d];
    b.extent[d] = v[1 + static_cast<std::size_t>(b.ndim) + d];
  }
  return b;
}

// About target_chunk_bytes per chunk, halving the largest extent until it
// fits, so chunks stay square-ish for tiles read back by region.
std::vector<hsize_t> chunk_dims(const std::vector<hsize_t>& dims, std::size_t itemsize) {
  std::vector<hsize_t> c = dims;
  auto bytes = [&] {
    hsize_t n = itemsize;
    for (const hsize_t d : c) n *= d;
    return n;
  };
  while (bytes() > target_chunk_bytes) {
    auto it = std::max_element(c.begin(), c.end());
    if (*it <= 1) break;
    *it = (*it + 1) / 2;
  }
  return c;
}

void write_array(const Ctx& c, hid_t group, const Array& a) {
  if (!a.placement().host_accessible())
    c.fail("cannot store " + a.describe() + ": it lives on device " + std::to_string(a.placement().device) +
               "; copy it to the host first",
           false);
  const hid_t type = native_type(a.dtype());
  std::vector<hsize_t> dims;
  for (const std::int64_t e : a.shape()) dims.push_back(static_cast<hsize_t>(e));
  Id space = a.ndim() == 0 ? scalar_space(c) : simple_space(c, dims);
  Id dcpl = c.check(H5Pcreate(H5P_DATASET_CREATE), H5Pclose, "cannot create a dataset property list");
  // Chunked so a reader (h5py, a later region read) need not load it whole;
  // a scalar or empty array has nothing to chunk.
  if (a.ndim() > 0 && a.numel() > 0) {
    const auto chunk = chunk_dims(dims, a.itemsize());
    c.check(H5Pset_chunk(dcpl, static_cast<int>(chunk.size()), chunk.data()), "cannot set the chunk shape");
  }
  Id ds = c.check(H5Dcreate2(group, "data", type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT), H5Dclose,
                  "cannot create the dataset of " + a.describe());
  if (a.numel() == 0) return;
  if (a.is_contiguous()) {
    c.check(H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, a.raw()), "cannot write " + a.describe());
    return;
  }
  const std::int64_t rows = a.shape(0);
  const std::size_t row_bytes = a.nbytes() / static_cast<std::size_t>(rows);
  const std::int64_t step = std::max<std::int64_t>(1, static_cast<std::int64_t>(strided_block_bytes / std::max<std::size_t>(1, row_bytes)));
  for (std::int64_t r = 0; r < rows; r += step) {
    const std::int64_t end = std::min(rows, r + step);
    const Array block = a.slice(0, r, end).clone();
    std::vector<hsize_t> start(dims.size(), 0), count = dims;
    start[0] = static_cast<hsize_t>(r);
    count[0] = static_cast<hsize_t>(end - r);
    Id fspace = c.check(H5Dget_space(ds), H5Sclose, "cannot get a dataspace");
    c.check(H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr),
            "cannot select rows");
    Id mspace = simple_space(c, count);
    c.check(H5Dwrite(ds, type, mspace, fspace, H5P_DEFAULT, block.raw()), "cannot write " + a.describe());
  }
}

Array read_array(const Ctx& c, hid_t group) {
  Id ds = c.check(H5Dopen2(group, "data", H5P_DEFAULT), H5Dclose, "cannot open the array dataset");
  Id ftype = c.check(H5Dget_type(ds), H5Tclose, "cannot read the array's type");
  const auto dtype = dtype_of(ftype);
  if (!dtype) c.fail("the array dataset has a type flowd does not read", false);
  Id space = c.check(H5Dget_space(ds), H5Sclose, "cannot read the array's shape");
  const int ndim = H5Sget_simple_extent_ndims(space);
  if (ndim < 0 || ndim > max_ndim) c.fail("the array dataset has an unreadable rank", ndim < 0);
  std::vector<hsize_t> dims(static_cast<std::size_t>(ndim));
  if (ndim > 0 && H5Sget_simple_extent_dims(space, dims.data(), nullptr) < 0) c.fail("cannot read the array's shape");
  std::vector<std::int64_t> shape(dims.begin(), dims.end());
  Array out = Array::uninitialized(*dtype, shape);
  if (out.numel() > 0)
    c.check(H5Dread(ds, native_type(*dtype), H5S_ALL, H5S_ALL, H5P_DEFAULT, out.raw()), "cannot read " + out.describe());
  return out;
}

void write_strings(const Ctx& c, hid_t loc, const char* name, const std::vector<std::string>& values, bool scalar) {
  std::vector<const char*> p;
  p.reserve(values.size());
  for (const auto& s : values) {
    check_text(c, s, std::string("dataset '") + name + "'");
    p.push_back(s.c_str());
  }
  Id type = string_type(c);
  Id space = scalar ? scalar_space(c) : simple_space(c, {values.size()});
  Id ds = c.check(H5Dcreate2(loc, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Dclose,
                  std::string("cannot create dataset '") + name + "'");
  if (!p.empty()) c.check(H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, p.data()), std::string("cannot write dataset '") + name + "'");
}

std::vector<std::string> read_strings(const Ctx& c, hid_t ds, hid_t space, const std::string& what) {
  const hssize_t n = H5Sget_simple_extent_npoints(space);
  if (n < 0) c.fail("cannot read the size of " + what);
  std::vector<char*> p(static_cast<std::size_t>(n), nullptr);
  Id type = string_type(c);
  std::vector<std::string> out;
  if (n == 0) return out;
  c.check(H5Dread(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, p.data()), "cannot read " + what);
  out.reserve(p.size());
  for (const char* s : p) out.emplace_back(s ? s : "");
  H5Dvlen_reclaim(type, space, H5P_DEFAULT, p.data());
  return out;
}

// Columns are datasets c0, c1, ... in table order, each carrying its name
// (names may hold any character, HDF5 link names may not).
void write_table(const Ctx& c, hid_t item, const Table& t) {
  try {
    (void)t.rows();
  } catch (const Error& e) {
    c.fail(e.what(), false);
  }
  Id g = c.check(H5Gcreate2(item, "table", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose, "cannot create the table group");
  set_attr(c, g, "ncolumns", std::vector<std::int64_t>{static_cast<std::int64_t>(t.num_columns())});
  std::size_t i = 0;
  for (const Column& col : t.columns()) {
    const std::string name = "c" + std::to_string(i++);
    if (col.type() == ColumnType::string) {
      write_strings(c, g, name.c_str(), std::get<std::vector<std::string>>(col.data), false);
    } else {
      const hid_t type = native_type(dtype_of(col.type()));
      Id space = simple_space(c, {col.size()});
      Id ds = c.check(H5Dcreate2(g, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Dclose,
                      "cannot create column '" + col.name + "'");
      const void* data = std::visit([](const auto& v) -> const void* { return v.data(); }, col.data);
      if (col.size() > 0)
        c.check(H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), "cannot write column '" + col.name + "'");
    }
    Id ds = c.check(H5Dopen2(g, name.c_str(), H5P_DEFAULT), H5Dclose, "cannot open column '" + col.name + "'");
    set_attr(c, ds, "name", col.name);
  }
}

template <class T> void read_numeric(const Ctx& c, hid_t ds, hid_t type, std::size_t n, std::vector<T>& out, const std::string& what) {
  out.resize(n);
  if (n > 0) c.check(H5Dread(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()), "cannot read " + what);
}

Table read_table(const Ctx& c, hid_t item) {
  Id g = c.check(H5Gopen2(item, "table", H5P_DEFAULT), H5Gclose, "cannot open the table group");
  const std::int64_t n = int_attr(c, g, "ncolumns");
  Table t;
  for (std::int64_t i = 0; i < n; ++i) {
    const std::string link = "c" + std::to_string(i);
    Id ds = c.check(H5Dopen2(g, link.c_str(), H5P_DEFAULT), H5Dclose, "cannot open column dataset '" + link + "'");
    const std::string name = string_attr(c, ds, "name");
    const std::string what = "column '" + name + "'";
    Id ftype = c.check(H5Dget_type(ds), H5Tclose, "cannot read the type of " + what);
    Id space = c.check(H5Dget_space(ds), H5Sclose, "cannot read the size of " + what);
    if (H5Tget_class(ftype) == H5T_STRING) {
      t.add_column<std::string>(name) = read_strings(c, ds, space, what);
      continue;
    }
    const auto dt = dtype_of(ftype);
    const auto ct = dt ? column_type_of(*dt) : std::nullopt;
    if (!ct) c.fail(what + " has a type flowd tables do not hold", false);
    const hssize_t rows = H5Sget_simple_extent_npoints(space);
    if (rows < 0) c.fail("cannot read the size of " + what);
    const auto nrows = static_cast<std::size_t>(rows);
    const hid_t mtype = native_type(*dt);
    switch (*ct) {
      case ColumnType::u8: read_numeric(c, ds, mtype, nrows, t.add_column<std::uint8_t>(name), what); break;
      case ColumnType::i32: read_numeric(c, ds, mtype, nrows, t.add_column<std::int32_t>(name), what); break;
      case ColumnType::i64: read_numeric(c, ds, mtype, nrows, t.add_column<std::int64_t>(name), what); break;
      case ColumnType::f32: read_numeric(c, ds, mtype, nrows, t.add_column<float>(name), what); break;
      case ColumnType::f64: read_numeric(c, ds, mtype, nrows, t.add_column<double>(name), what); break;
      case ColumnType::string: break;
    }
  }
  return t;
}

std::string read_json_text(const Ctx& c, hid_t item) {
  Id ds = c.check(H5Dopen2(item, "json", H5P_DEFAULT), H5Dclose, "cannot open the JSON dataset");
  Id space = c.check(H5Dget_space(ds), H5Sclose, "cannot read the JSON dataset");
  const auto v = read_strings(c, ds, space, "the JSON value");
  if (v.size() != 1) c.fail("the JSON dataset does not hold one string", false);
  return v[0];
}

const char* kind_name(ValueKind k) {
  switch (k) {
    case ValueKind::none: return "none";
    case ValueKind::array: return "array";
    case ValueKind::table: return "table";
    case ValueKind::json: return "json";
  }
  return "none";
}

// The id an item is stored under: the name given to put(), else its own
// metadata's.
wire::ItemId stored_name(const Ctx& c, hid_t g) {
  const bool named = H5Aexists(g, "name_key") > 0;
  wire::ItemId id;
  id.key = string_attr(c, g, named ? "name_key" : "key");
  id.version = int_attr(c, g, named ? "name_version" : "version");
  id.timestamp = int_attr(c, g, named ? "name_timestamp" : "timestamp");
  return id;
}

void write_item(const Ctx& c, hid_t g, const Item& item) {
  const ItemMeta& m = item.meta;
  set_attr(c, g, "key", m.key);
  set_attr(c, g, "version", std::vector<std::int64_t>{m.version});
  set_attr(c, g, "timestamp", std::vector<std::int64_t>{m.timestamp});
  if (m.bbox) set_box(c, g, "bbox", *m.bbox);
  if (m.core) set_box(c, g, "core", *m.core);
  set_attr(c, g, "attrs", m.attrs.dump());
  set_attr(c, g, "kind", kind_name(kind_of(item.value)));
  switch (kind_of(item.value)) {
    case ValueKind::none: break;
    case ValueKind::array: write_array(c, g, std::get<Array>(item.value)); break;
    case ValueKind::table: write_table(c, g, std::get<Table>(item.value)); break;
    case ValueKind::json: write_strings(c, g, "json", {std::get<Json>(item.value).dump()}, true); break;
  }
}

Item read_item(const Ctx& c, hid_t g) {
  Item item;
  item.meta.key = string_attr(c, g, "key");
  item.meta.version = int_attr(c, g, "version");
  item.meta.timestamp = int_attr(c, g, "timestamp");
  item.meta.bbox = box_attr(c, g, "bbox");
  item.meta.core = box_attr(c, g, "core");
  item.meta.attrs = Json::parse(string_attr(c, g, "attrs"));
  const std::string kind = string_attr(c, g, "kind");
  if (kind == "array") item.value = read_array(c, g);
  else if (kind == "table") item.value = read_table(c, g);
  else if (kind == "json") item.value = Json::parse(read_json_text(c, g));
  else if (kind != "none") c.fail("unknown value kind '" + kind + "'", false);
  return item;
}

}  // namespace

struct Hdf5ItemStore::File {
  Id file;
  Id items;
  std::uint64_t next_temp = 0;

  // put() and erase() return only once the change would survive the
  // machine going down: H5Fflush hands HDF5's caches to the OS, fsync
  // takes them to the disk.
  void sync(const Ctx& c) const {
    c.check(H5Fflush(file, H5F_SCOPE_GLOBAL), "cannot flush the file");
    void* handle = nullptr;
    c.check(H5Fget_vfd_handle(file, H5P_DEFAULT, &handle), "cannot get the file descriptor");
    if (handle && ::fsync(*static_cast<int*>(handle)) != 0) c.fail("fsync failed", false);
  }
};

std::string Hdf5ItemStore::link_name(const wire::ItemId& id) {
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string s;
  s.reserve(id.key.size() + 24);
  for (const char ch : id.key) {
    const auto u = static_cast<unsigned char>(ch);
    if ((u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || (u >= '0' && u <= '9') || u == '_' || u == '-') {
      s += ch;
    } else {
      s += '%';
      s += hex[u >> 4];
      s += hex[u & 15];
    }
  }
  return s + "@" + std::to_string(id.version) + "@" + std::to_string(id.timestamp);
}

namespace {

Id file_access(const Ctx& c) {
  Id fapl = c.check(H5Pcreate(H5P_FILE_ACCESS), H5Pclose, "cannot create a file access property list");
  // Strong close: closing the file really closes it, so a store can be
  // reopened (or the file removed) right after its destructor ran.
  c.check(H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG), "cannot set the file close degree");
  return fapl;
}

// A new store is built under a temporary name and renamed into place, so a
// crash while creating it never leaves a half-written file at `path`.
void create_store(const Ctx& c, const fs::path& path) {
  const fs::path tmp = path.string() + ".creating";
  std::error_code ec;
  fs::remove(tmp, ec);
  {
    Id fapl = file_access(c);
    Id f = c.check(H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl), H5Fclose, "cannot create the file");
    set_attr(c, f, format_attr, format_value);
    c.check(H5Gcreate2(f, items_group, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose, "cannot create /items");
  }
  {
    const int fd = ::open(tmp.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0 || ::fsync(fd) != 0) {
      if (fd >= 0) ::close(fd);
      c.fail("cannot sync the new file", false);
    }
    ::close(fd);
  }
  fs::rename(tmp, path, ec);
  if (ec) c.fail("cannot rename " + tmp.string() + " into place: " + ec.message(), false);
  sync_dir(path);
}

}  // namespace

Hdf5ItemStore::Hdf5ItemStore(fs::path path) : path_(std::move(path)), file_(std::make_unique<File>()) {
  Session session;
  const Ctx c{path_, ""};
  std::error_code ec;
  if (!fs::exists(path_, ec)) create_store(c, path_);
  Id fapl = file_access(c);
  file_->file = c.check(H5Fopen(path_.c_str(), H5F_ACC_RDWR, fapl), H5Fclose, "cannot open the file");
  if (!has_attr(c, file_->file, format_attr) || string_attr(c, file_->file, format_attr) != format_value)
    c.fail("not a flowd item store (no root attribute flowd_store = \"" + std::string(format_value) + "\")", false);
  // Whatever is under /staging is an interrupted put: never linked into
  // /items, so never part of the store. If HDF5 cannot even delete it (the
  // crash tore its metadata), it is set aside under another name: it only
  // costs space.
  if (c.exists(file_->file, staging_group) && H5Ldelete(file_->file, staging_group, H5P_DEFAULT) < 0) {
    std::string aside;
    for (int n = 0;; ++n) {
      aside = "orphaned-" + std::to_string(n);
      if (!c.exists(file_->file, aside)) break;
    }
    c.check(H5Lmove(file_->file, staging_group, file_->file, aside.c_str(), H5P_DEFAULT, H5P_DEFAULT),
            "cannot set aside the debris of an interrupted put");
  }
  Id staging = c.check(H5Gcreate2(file_->file, staging_group, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose,
                       "cannot create /staging");
  file_->items = c.check(H5Gopen2(file_->file, items_group, H5P_DEFAULT), H5Gclose, "cannot open /items");
  file_->sync(c);
}

Hdf5ItemStore::~Hdf5ItemStore() {
  Session session;
  file_->items.reset();
  file_->file.reset();
}

void Hdf5ItemStore::put(const Item& item) { put(wire::id_of(item.meta), item); }

void Hdf5ItemStore::put(const wire::ItemId& id, const Item& item) {
  Session session;
  const Ctx c{path_, describe(id)};
  const std::string temp = std::string(staging_group) + "/" + std::to_string(file_->next_temp++);
  const std::string final_name = std::string(items_group) + "/" + link_name(id);
  try {
    {
      Id g = c.check(H5Gcreate2(file_->file, temp.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose,
                     "cannot create a staging group");
      write_item(c, g, item);
      // Filed under a name of the caller's: kept beside the metadata, which
      // stays the item's own.
      if (id != wire::id_of(item.meta)) {
        set_attr(c, g, "name_key", id.key);
        set_attr(c, g, "name_version", std::vector<std::int64_t>{id.version});
        set_attr(c, g, "name_timestamp", std::vector<std::int64_t>{id.timestamp});
      }
    }
    // The data reaches the file before the link that makes it visible, so
    // that no crash can leave /items naming a half-written item.
    c.check(H5Fflush(file_->file, H5F_SCOPE_GLOBAL), "cannot flush the file");
    if (c.exists(file_->file, final_name))
      c.check(H5Ldelete(file_->file, final_name.c_str(), H5P_DEFAULT), "cannot replace the stored version");
    c.check(H5Lmove(file_->file, temp.c_str(), file_->file, final_name.c_str(), H5P_DEFAULT, H5P_DEFAULT),
            "cannot link the item into /items");
  } catch (const nlohmann::json::exception& e) {
    H5Ldelete(file_->file, temp.c_str(), H5P_DEFAULT);
    c.fail(std::string("cannot encode as JSON: ") + e.what(), false);
  } catch (...) {
    H5Ldelete(file_->file, temp.c_str(), H5P_DEFAULT);
    throw;
  }
  file_->sync(c);
}

bool Hdf5ItemStore::erase(const wire::ItemId& id) {
  Session session;
  const Ctx c{path_, describe(id)};
  const std::string name = link_name(id);
  if (!c.exists(file_->items, name)) return false;
  c.check(H5Ldelete(file_->items, name.c_str(), H5P_DEFAULT), "cannot erase");
  file_->sync(c);
  return true;
}

bool Hdf5ItemStore::contains(const wire::ItemId& id) const {
  Session session;
  const Ctx c{path_, describe(id)};
  return c.exists(file_->items, link_name(id));
}

std::size_t Hdf5ItemStore::size() const {
  Session session;
  const Ctx c{path_, ""};
  H5G_info_t info;
  c.check(H5Gget_info(file_->items, &info), "cannot list /items");
  return static_cast<std::size_t>(info.nlinks);
}

std::vector<wire::ItemId> Hdf5ItemStore::ids() const {
  Session session;
  const Ctx c{path_, ""};
  H5G_info_t info;
  c.check(H5Gget_info(file_->items, &info), "cannot list /items");
  std::vector<wire::ItemId> out;
  out.reserve(info.nlinks);
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    Id g = c.check(H5Oopen_by_idx(file_->items, ".", H5_INDEX_NAME, H5_ITER_INC, i, H5P_DEFAULT), H5Oclose,
                   "cannot open entry " + std::to_string(i) + " of /items");
    out.push_back(stored_name(c, g));
  }
  return out;
}

std::shared_ptr<const Item> Hdf5ItemStore::find(const wire::ItemId& id) const {
  Session session;
  const Ctx c{path_, describe(id)};
  const std::string name = link_name(id);
  if (!c.exists(file_->items, name)) return nullptr;
  Id g = c.check(H5Gopen2(file_->items, name.c_str(), H5P_DEFAULT), H5Gclose, "cannot open the item");
  try {
    auto item = std::make_shared<Item>(read_item(c, g));
    if (const auto stored = stored_name(c, g); stored != id) c.fail("the stored item is named " + describe(stored), false);
    return item;
  } catch (const nlohmann::json::exception& e) {
    c.fail(std::string("stored JSON does not parse: ") + e.what(), false);
  }
}

}  // namespace flowd::store
