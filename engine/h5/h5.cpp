#include "h5.hpp"

#include <string_view>

#include "flowd/error.hpp"

namespace flowd::h5 {

namespace {

herr_t keep_innermost(unsigned, const H5E_error2_t* e, void* out) {
  if (e->desc && *e->desc) static_cast<std::string*>(out)->assign(e->desc);
  return 0;
}

Id open_attr(hid_t obj, const char* name) {
  return check(H5Aopen(obj, name, H5P_DEFAULT), H5Aclose, std::string("cannot open attribute '") + name + "'");
}

bool attr_exists(hid_t obj, const char* name) {
  const htri_t e = H5Aexists(obj, name);
  if (e < 0) throw Error(std::string("cannot look up attribute '") + name + "': " + last_error());
  return e > 0;
}

// A new attribute, replacing one of the same name.
Id new_attr(hid_t obj, const char* name, hid_t type, hid_t space) {
  if (attr_exists(obj, name)) check(H5Adelete(obj, name), std::string("cannot replace attribute '") + name + "'");
  return check(H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT), H5Aclose,
               std::string("cannot create attribute '") + name + "'");
}

Id simple_space(hsize_t n) { return check(H5Screate_simple(1, &n, nullptr), H5Sclose, "cannot create a dataspace"); }

std::size_t points(hid_t attr) {
  Id space = check(H5Aget_space(attr), H5Sclose, "cannot read an attribute's dataspace");
  const hssize_t n = H5Sget_simple_extent_npoints(space);
  if (n < 0) throw Error("cannot read an attribute's size: " + last_error());
  return static_cast<std::size_t>(n);
}

Id fixed_string_type(std::size_t size) {
  Id t = check(H5Tcopy(H5T_C_S1), H5Tclose, "cannot create a string type");
  check(H5Tset_size(t, size), "cannot size a string type");
  return t;
}

// Reads a string attribute of any length kind into `n` strings.
std::vector<std::string> read_strings(hid_t attr, const char* name) {
  Id type = check(H5Aget_type(attr), H5Tclose, std::string("cannot read the type of attribute '") + name + "'");
  if (H5Tget_class(type) != H5T_STRING) throw Error(std::string("attribute '") + name + "' does not hold text");
  const std::size_t n = points(attr);
  std::vector<std::string> out;
  out.reserve(n);
  if (H5Tis_variable_str(type) > 0) {
    StringBuffer buf(n);
    Id mem = string_type(H5Tget_cset(type));
    check(H5Aread(attr, mem, buf.data()), std::string("cannot read attribute '") + name + "'");
    for (std::size_t i = 0; i < n; ++i) out.push_back(buf.at(i));
    return out;
  }
  const std::size_t size = H5Tget_size(type);
  Id mem = fixed_string_type(size);
  check(H5Tset_cset(mem, H5Tget_cset(type)), "cannot create a string type");
  std::string all(n * size, '\0');
  check(H5Aread(attr, mem, all.data()), std::string("cannot read attribute '") + name + "'");
  for (std::size_t i = 0; i < n; ++i) {
    std::string s = all.substr(i * size, size);
    s.resize(s.find('\0') == std::string::npos ? s.size() : s.find('\0'));
    out.push_back(std::move(s));
  }
  return out;
}

Id file_access() {
  Id fapl = check(H5Pcreate(H5P_FILE_ACCESS), H5Pclose, "cannot create a file access property list");
  check(H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG), "cannot set the file close degree");
  return fapl;
}

}  // namespace

void Id::close(const std::string& what) {
  const herr_t r = id_ >= 0 && closer_ ? closer_(id_) : 0;
  id_ = H5I_INVALID_HID;
  if (r < 0) throw Error(what + ": " + last_error());
}

Quiet::Quiet() noexcept {
  H5Eget_auto2(H5E_DEFAULT, &func_, &data_);
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}

Quiet::~Quiet() { H5Eset_auto2(H5E_DEFAULT, func_, data_); }

std::string last_error() {
  std::string s;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, keep_innermost, &s);
  // The file driver reports a failed read or write in one long line ("file
  // write failed: time = ..., errno = 28, error message = 'No space left on
  // device', buf = ..."); the system's reason is what a user needs.
  constexpr std::string_view marker = "error message = '";
  if (const auto at = s.find(marker); at != std::string::npos) {
    const auto from = at + marker.size();
    const auto end = s.find('\'', from);
    if (end != std::string::npos && end > from) return s.substr(from, end - from);
  }
  return s.empty() ? "unknown HDF5 error" : s;
}

void no_cleanup_at_exit() { H5dont_atexit(); }

Id check(hid_t id, Id::Closer closer, const std::string& what) {
  if (id < 0) throw Error(what + ": " + last_error());
  return Id(id, closer);
}

void check(herr_t status, const std::string& what) {
  if (status < 0) throw Error(what + ": " + last_error());
}

Id create_file(const std::filesystem::path& path) {
  Id fapl = file_access();
  return check(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl), H5Fclose,
               "cannot create the file");
}

Id open_file_read(const std::filesystem::path& path) {
  // The default (weak) close degree: a file may already be open elsewhere in
  // the process, and HDF5 refuses a second open with another degree.
  return check(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose, "cannot open the file");
}

Id create_group(hid_t loc, const std::string& path, bool track_order) {
  Id lcpl = check(H5Pcreate(H5P_LINK_CREATE), H5Pclose, "cannot create a link property list");
  check(H5Pset_create_intermediate_group(lcpl, 1), "cannot request intermediate groups");
  Id gcpl = check(H5Pcreate(H5P_GROUP_CREATE), H5Pclose, "cannot create a group property list");
  if (track_order)
    check(H5Pset_link_creation_order(gcpl, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED), "cannot track link order");
  return check(H5Gcreate2(loc, path.c_str(), lcpl, gcpl, H5P_DEFAULT), H5Gclose, "cannot create group '" + path + "'");
}

ObjectType object_type(hid_t loc, const std::string& path) {
  if (path == "/") return ObjectType::group;
  // H5Lexists needs every part before the last to exist and be a group.
  std::size_t pos = path.starts_with('/') ? 1 : 0;
  while (true) {
    const auto slash = path.find('/', pos);
    const std::string prefix = path.substr(0, slash);
    const htri_t e = H5Lexists(loc, prefix.c_str(), H5P_DEFAULT);
    if (e < 0) throw Error("cannot look up '" + prefix + "': " + last_error());
    if (e == 0) return ObjectType::none;
    Id obj = check(H5Oopen(loc, prefix.c_str(), H5P_DEFAULT), H5Oclose, "cannot open '" + prefix + "'");
    const H5I_type_t t = H5Iget_type(obj);
    const ObjectType type = t == H5I_GROUP ? ObjectType::group : t == H5I_DATASET ? ObjectType::dataset : ObjectType::other;
    if (slash == std::string::npos) return type;
    if (type != ObjectType::group) return ObjectType::none;
    pos = slash + 1;
  }
}

std::vector<std::string> link_names(hid_t group) {
  H5G_info_t info;
  check(H5Gget_info(group, &info), "cannot list a group");
  std::vector<std::string> names;
  names.reserve(info.nlinks);
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    const ssize_t len = H5Lget_name_by_idx(group, ".", H5_INDEX_NAME, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
    if (len < 0) throw Error("cannot list a group: " + last_error());
    std::vector<char> buf(static_cast<std::size_t>(len) + 1);
    if (H5Lget_name_by_idx(group, ".", H5_INDEX_NAME, H5_ITER_INC, i, buf.data(), buf.size(), H5P_DEFAULT) < 0)
      throw Error("cannot list a group: " + last_error());
    names.emplace_back(buf.data(), static_cast<std::size_t>(len));
  }
  return names;
}

namespace {

Id select_rows(hid_t dataset, hsize_t at, hsize_t n) {
  Id space = check(H5Dget_space(dataset), H5Sclose, "cannot get a dataset's dataspace");
  check(H5Sselect_hyperslab(space, H5S_SELECT_SET, &at, nullptr, &n, nullptr), "cannot select rows");
  return space;
}

}  // namespace

void write_rows(hid_t dataset, hid_t type, hsize_t at, hsize_t n, const void* buf) {
  Id file_space = select_rows(dataset, at, n);
  Id mem = check(H5Screate_simple(1, &n, nullptr), H5Sclose, "cannot create a dataspace");
  check(H5Dwrite(dataset, type, mem, file_space, H5P_DEFAULT, buf), "cannot write rows");
}

void read_rows(hid_t dataset, hid_t type, hsize_t at, hsize_t n, void* buf) {
  Id file_space = select_rows(dataset, at, n);
  Id mem = check(H5Screate_simple(1, &n, nullptr), H5Sclose, "cannot create a dataspace");
  check(H5Dread(dataset, type, mem, file_space, H5P_DEFAULT, buf), "cannot read rows");
}

Id string_type(H5T_cset_t cset) {
  Id t = check(H5Tcopy(H5T_C_S1), H5Tclose, "cannot create a string type");
  check(H5Tset_size(t, H5T_VARIABLE), "cannot create a string type");
  check(H5Tset_cset(t, cset), "cannot create a string type");
  return t;
}

void set_attr(hid_t obj, const char* name, const std::string& value) {
  Id type = string_type();
  Id space = check(H5Screate(H5S_SCALAR), H5Sclose, "cannot create a dataspace");
  Id a = new_attr(obj, name, type, space);
  const char* p = value.c_str();
  check(H5Awrite(a, type, &p), std::string("cannot write attribute '") + name + "'");
}

void set_attr(hid_t obj, const char* name, std::int64_t value) {
  Id space = check(H5Screate(H5S_SCALAR), H5Sclose, "cannot create a dataspace");
  Id a = new_attr(obj, name, H5T_NATIVE_INT64, space);
  check(H5Awrite(a, H5T_NATIVE_INT64, &value), std::string("cannot write attribute '") + name + "'");
}

void set_attr(hid_t obj, const char* name, std::span<const std::int64_t> values) {
  Id space = simple_space(values.size());
  Id a = new_attr(obj, name, H5T_NATIVE_INT64, space);
  check(H5Awrite(a, H5T_NATIVE_INT64, values.data()), std::string("cannot write attribute '") + name + "'");
}

void set_attr(hid_t obj, const char* name, const std::vector<std::string>& values) {
  Id type = string_type();
  Id space = simple_space(values.size());
  Id a = new_attr(obj, name, type, space);
  std::vector<const char*> p;
  p.reserve(values.size());
  for (const auto& v : values) p.push_back(v.c_str());
  check(H5Awrite(a, type, p.data()), std::string("cannot write attribute '") + name + "'");
}

std::optional<std::string> string_attr(hid_t obj, const char* name) {
  if (!attr_exists(obj, name)) return std::nullopt;
  Id a = open_attr(obj, name);
  auto v = read_strings(a, name);
  if (v.size() != 1) throw Error(std::string("attribute '") + name + "' holds " + std::to_string(v.size()) + " strings, not one");
  return std::move(v.front());
}

std::optional<std::vector<std::string>> strings_attr(hid_t obj, const char* name) {
  if (!attr_exists(obj, name)) return std::nullopt;
  Id a = open_attr(obj, name);
  return read_strings(a, name);
}

std::optional<std::vector<std::int64_t>> ints_attr(hid_t obj, const char* name) {
  if (!attr_exists(obj, name)) return std::nullopt;
  Id a = open_attr(obj, name);
  Id type = check(H5Aget_type(a), H5Tclose, std::string("cannot read the type of attribute '") + name + "'");
  if (H5Tget_class(type) != H5T_INTEGER) throw Error(std::string("attribute '") + name + "' does not hold integers");
  std::vector<std::int64_t> v(points(a));
  check(H5Aread(a, H5T_NATIVE_INT64, v.data()), std::string("cannot read attribute '") + name + "'");
  return v;
}

std::optional<std::int64_t> int_attr(hid_t obj, const char* name) {
  auto v = ints_attr(obj, name);
  if (!v) return std::nullopt;
  if (v->size() != 1) throw Error(std::string("attribute '") + name + "' holds " + std::to_string(v->size()) + " integers, not one");
  return v->front();
}

hid_t native_type(DType t) {
  switch (t) {
    case DType::u8: return H5T_NATIVE_UINT8;
    case DType::i8: return H5T_NATIVE_INT8;
    case DType::u16: return H5T_NATIVE_UINT16;
    case DType::i16: return H5T_NATIVE_INT16;
    case DType::u32: return H5T_NATIVE_UINT32;
    case DType::i32: return H5T_NATIVE_INT32;
    case DType::u64: return H5T_NATIVE_UINT64;
    case DType::i64: return H5T_NATIVE_INT64;
    case DType::f32: return H5T_NATIVE_FLOAT;
    case DType::f64: return H5T_NATIVE_DOUBLE;
  }
  throw Error("no HDF5 type for dtype " + std::to_string(static_cast<int>(t)));
}

std::optional<DType> dtype_of(hid_t type) {
  const std::size_t size = H5Tget_size(type);
  switch (H5Tget_class(type)) {
    case H5T_INTEGER: {
      const bool is_unsigned = H5Tget_sign(type) == H5T_SGN_NONE;
      switch (size) {
        case 1: return is_unsigned ? DType::u8 : DType::i8;
        case 2: return is_unsigned ? DType::u16 : DType::i16;
        case 4: return is_unsigned ? DType::u32 : DType::i32;
        case 8: return is_unsigned ? DType::u64 : DType::i64;
        default: return std::nullopt;
      }
    }
    case H5T_FLOAT:
      if (size == 4) return DType::f32;
      if (size == 8) return DType::f64;
      return std::nullopt;
    default: return std::nullopt;
  }
}

hid_t native_type(ColumnType t) {
  switch (t) {
    case ColumnType::u8: return H5T_NATIVE_UINT8;
    case ColumnType::i32: return H5T_NATIVE_INT32;
    case ColumnType::i64: return H5T_NATIVE_INT64;
    case ColumnType::f32: return H5T_NATIVE_FLOAT;
    case ColumnType::f64: return H5T_NATIVE_DOUBLE;
    case ColumnType::string: break;
  }
  throw Error("string columns have no native HDF5 type; use string_type()");
}

std::optional<ColumnType> column_type_of(hid_t type) {
  if (H5Tget_class(type) == H5T_STRING) {
    if (H5Tis_variable_str(type) > 0) return ColumnType::string;
    return std::nullopt;
  }
  const auto d = dtype_of(type);
  return d ? column_type_of(*d) : std::nullopt;
}

std::optional<ColumnType> column_type_of(DType t) {
  switch (t) {
    case DType::u8: return ColumnType::u8;
    case DType::i32: return ColumnType::i32;
    case DType::i64: return ColumnType::i64;
    case DType::f32: return ColumnType::f32;
    case DType::f64: return ColumnType::f64;
    default: return std::nullopt;
  }
}

StringBuffer::~StringBuffer() {
  for (char* p : p_)
    if (p) H5free_memory(p);
}

}  // namespace flowd::h5
