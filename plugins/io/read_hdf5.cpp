#include "read_hdf5.hpp"

#include <algorithm>
#include <optional>
#include <unordered_set>

#include "hdf5_layout.hpp"

namespace flowd::io {

namespace fs = std::filesystem;

namespace {

// Tables are scanned for item keys in blocks of this many rows.
constexpr hsize_t key_block_rows = 65536;

// What kind_ says for a plain 3-D dataset (not one of io.write_hdf5's groups).
constexpr std::string_view kind_series = "series";

// "frames_007": the dataset's last name part and the frame index, padded to
// the digits of the last index (at least 3) so the keys sort in frame order
// in any tool.
std::string frame_key(const std::string& dataset, std::size_t index, std::size_t count) {
  const std::string leaf = dataset.substr(dataset.rfind('/') + 1);
  const std::string n = std::to_string(index);
  const std::size_t digits = std::max<std::size_t>(3, std::to_string(count > 0 ? count - 1 : 0).size());
  return leaf + "_" + std::string(digits > n.size() ? digits - n.size() : 0, '0') + n;
}

std::optional<Box> box_from(const std::optional<std::vector<std::int64_t>>& v, const std::string& what) {
  if (!v) return std::nullopt;
  const std::size_t n = v->size() / 2;
  if (v->empty() || v->size() % 2 != 0 || n > static_cast<std::size_t>(Box::max_dims))
    throw Error(what + " has " + std::to_string(v->size()) + " values; expected [origin..., extent...] of at most " +
                std::to_string(Box::max_dims) + " dimensions");
  Box b;
  b.ndim = static_cast<int>(n);
  for (std::size_t d = 0; d < n; ++d) {
    b.origin[d] = (*v)[d];
    b.extent[d] = (*v)[n + d];
  }
  return b;
}

template <class T>
void read_numeric(Table& out, const std::string& name, hid_t dataset, ColumnType type, hsize_t start, hsize_t rows) {
  auto& v = out.add_column<T>(name);
  v.resize(rows);
  if (rows > 0) h5::read_rows(dataset, h5::native_type(type), start, rows, v.data());
}

}  // namespace

OperatorSpec ReadHdf5::spec() {
  OperatorSpec s;
  s.name = "io.read_hdf5";
  s.doc = "Reads back what io.write_hdf5 stored: one item per array, or table rows per item key (or whole)";
  s.outputs = {{"data", "any", "arrays with their stored key, version, timestamp, bbox, core and attrs; or tables"}};
  s.params = {
      ParamSpec::string("path").input_path().doc("the .h5 file written by io.write_hdf5, or one with a 3-D dataset"),
      ParamSpec::string("dataset", "data")
          .doc("the group to read (io.write_hdf5's `dataset`), or a 3-D dataset (frames, rows, columns) read as a "
               "series of 2-D frames keyed <name>_000, <name>_001, ..."),
      ParamSpec::string("split", "key")
          .choices({"key", "none"})
          .doc("tables only: key = one item per item key (without the item_key column); none = one item with the whole "
               "table, item_key included, keyed by the dataset name"),
  };
  return s;
}

ReadHdf5::ReadHdf5(const Params& params)
    : path_(params.get<std::string>("path")),
      dataset_(params.get<std::string>("dataset")),
      split_by_key_(params.get<std::string>("split") == "key") {
  if (path_.empty()) throw ParamError("path", "path is empty");
  dataset_ = layout::dataset_param(dataset_);
}

std::string ReadHdf5::where() const {
  return "HDF5 file '" + path_.string() + (kind_ == kind_series ? "', dataset '/" : "', group '/") + dataset_ + "'";
}

void ReadHdf5::open(SourceContext& ctx) {
  h5::Quiet quiet;
  try {
    std::error_code ec;
    if (!fs::exists(path_, ec)) throw Error("the file does not exist");
    file_ = h5::open_file_read(path_);
    const std::string group = "/" + dataset_;
    const auto type = h5::object_type(file_, group);
    if (type == h5::ObjectType::none) {
      std::string have;
      h5::Id root = h5::check(H5Gopen2(file_, "/", H5P_DEFAULT), H5Gclose, "cannot open the root group");
      for (const auto& n : h5::link_names(root)) have += (have.empty() ? "" : ", ") + n;
      throw Error("no such group (the file's root holds: " + (have.empty() ? "nothing" : have) + ")");
    }
    if (type == h5::ObjectType::dataset) {
      open_series();
      ctx.expect(total_);
      return;
    }
    if (type != h5::ObjectType::group) throw Error("neither a group nor a dataset");
    group_ = h5::check(H5Gopen2(file_, group.c_str(), H5P_DEFAULT), H5Gclose, "cannot open the group");
    const auto kind = h5::string_attr(group_, layout::kind_attr);
    if (!kind) throw Error(std::string("no '") + layout::kind_attr + "' attribute: not written by io.write_hdf5");
    kind_ = *kind;
    if (kind_ == layout::kind_arrays) {
      list_arrays(group_, "");
      std::sort(arrays_.begin(), arrays_.end(), [](const auto& a, const auto& b) { return key_less(a, b); });
      total_ = arrays_.size();
    } else if (kind_ == layout::kind_table) {
      open_table();
      if (split_by_key_) find_runs();
      total_ = split_by_key_ ? runs_.size() : 1;
    } else if (kind_ == layout::kind_empty) {
      total_ = 0;
    } else {
      throw Error(std::string(layout::kind_attr) + " is '" + kind_ + "'; io.read_hdf5 reads '" +
                  std::string(layout::kind_arrays) + "', '" + std::string(layout::kind_table) + "' or '" +
                  std::string(layout::kind_empty) + "'");
    }
  } catch (const Error& e) {
    throw Error(where() + ": " + e.what());
  }
  ctx.expect(total_);
}

void ReadHdf5::open_series() {
  kind_ = kind_series;
  series_ = h5::check(H5Dopen2(file_, ("/" + dataset_).c_str(), H5P_DEFAULT), H5Dclose, "cannot open the dataset");
  h5::Id type = h5::check(H5Dget_type(series_), H5Tclose, "cannot read the dataset's type");
  const auto dtype = h5::dtype_of(type);
  if (!dtype) throw Error("the dataset does not hold integers or floats");
  series_dtype_ = *dtype;
  h5::Id space = h5::check(H5Dget_space(series_), H5Sclose, "cannot read the dataset's shape");
  const int ndim = H5Sget_simple_extent_ndims(space);
  if (ndim != 3)
    throw Error("a dataset of " + std::to_string(ndim) +
                " dimensions; io.read_hdf5 reads a 3-D dataset (frames, rows, columns) as a series of frames, or a "
                "group written by io.write_hdf5");
  h5::check(H5Sget_simple_extent_dims(space, series_dims_, nullptr), "cannot read the dataset's shape");
  total_ = static_cast<std::size_t>(series_dims_[0]);
}

Item ReadHdf5::read_frame(std::size_t index) const {
  const hsize_t rows = series_dims_[1], cols = series_dims_[2];
  Array a = Array::uninitialized(
      series_dtype_, std::vector<std::int64_t>{static_cast<std::int64_t>(rows), static_cast<std::int64_t>(cols)});
  if (a.numel() > 0) {
    h5::Id file_space = h5::check(H5Dget_space(series_), H5Sclose, "cannot read the dataset's shape");
    const hsize_t start[3] = {index, 0, 0}, count[3] = {1, rows, cols};
    h5::check(H5Sselect_hyperslab(file_space, H5S_SELECT_SET, start, nullptr, count, nullptr),
              "cannot select frame " + std::to_string(index));
    const hsize_t mem_dims[2] = {rows, cols};
    h5::Id mem_space = h5::check(H5Screate_simple(2, mem_dims, nullptr), H5Sclose, "cannot describe a frame");
    h5::check(H5Dread(series_, h5::native_type(series_dtype_), mem_space, file_space, H5P_DEFAULT, a.raw()),
              "cannot read frame " + std::to_string(index));
  }
  Item item;
  item.meta.key = frame_key(dataset_, index, total_);
  item.meta.timestamp = static_cast<std::int64_t>(index);
  item.meta.bbox = Box::make2d(0, 0, static_cast<std::int64_t>(rows), static_cast<std::int64_t>(cols));
  item.meta.attrs = {{"image", item.meta.key},
                     {"file", path_.string()},
                     {"dataset", "/" + dataset_},
                     {"frame", index},
                     {"image_shape", {rows, cols}}};
  item.value = std::move(a);
  return item;
}

void ReadHdf5::list_arrays(hid_t group, const std::string& prefix) {
  for (const auto& name : h5::link_names(group)) {
    const auto type = h5::object_type(group, name);
    if (type == h5::ObjectType::dataset) {
      arrays_.push_back(prefix + name);
    } else if (type == h5::ObjectType::group) {
      h5::Id sub = h5::check(H5Gopen2(group, name.c_str(), H5P_DEFAULT), H5Gclose, "cannot open group '" + prefix + name + "'");
      list_arrays(sub, prefix + name + "/");
    }
  }
}

void ReadHdf5::open_table() {
  const auto names = h5::strings_attr(group_, layout::columns_attr);
  if (!names) throw Error(std::string("no '") + layout::columns_attr + "' attribute naming the table's columns");
  for (const auto& name : *names) {
    if (h5::object_type(group_, name) != h5::ObjectType::dataset)
      throw Error("column '" + name + "' is listed in '" + layout::columns_attr + "' but is not a dataset");
    h5::Id ds = h5::check(H5Dopen2(group_, name.c_str(), H5P_DEFAULT), H5Dclose, "cannot open column '" + name + "'");
    h5::Id type = h5::check(H5Dget_type(ds), H5Tclose, "cannot read the type of column '" + name + "'");
    const auto ct = h5::column_type_of(type);
    if (!ct)
      throw Error("column '" + name + "' has an HDF5 type that is not a table column type (u8, i32, i64, f32, f64, "
                  "variable-length string)");
    h5::Id space = h5::check(H5Dget_space(ds), H5Sclose, "cannot read the shape of column '" + name + "'");
    hsize_t rows = 0;
    if (H5Sget_simple_extent_ndims(space) != 1 || H5Sget_simple_extent_dims(space, &rows, nullptr) != 1)
      throw Error("column '" + name + "' is not one-dimensional");
    if (!columns_.empty() && rows != table_rows_)
      throw Error("column '" + name + "' has " + std::to_string(rows) + " rows but '" + columns_.front().name +
                  "' has " + std::to_string(table_rows_));
    table_rows_ = rows;
    h5::Id strings = *ct == ColumnType::string ? h5::string_type(H5Tget_cset(type)) : h5::Id();
    columns_.push_back({name, *ct, std::move(ds), std::move(strings)});
  }
  if (columns_.empty() || columns_.front().name != layout::key_column || columns_.front().type != ColumnType::string)
    throw Error(std::string("the first column is not the string column '") + layout::key_column + "'");
}

void ReadHdf5::find_runs() {
  std::unordered_set<std::string> seen;
  const TableColumn& keys = columns_.front();
  for (hsize_t start = 0; start < table_rows_; start += key_block_rows) {
    const hsize_t n = std::min(key_block_rows, table_rows_ - start);
    h5::StringBuffer block(n);
    h5::read_rows(keys.dataset, keys.strings, start, n, block.data());
    for (hsize_t j = 0; j < n; ++j) {
      std::string k = block.at(j);
      if (!runs_.empty() && runs_.back().key == k) {
        ++runs_.back().rows;
        continue;
      }
      if (!seen.insert(k).second)
        throw Error("the rows of item '" + k + "' are not contiguous, so split=\"key\" cannot give one item per key "
                    "(io.write_hdf5 always writes them together; read this table with split=\"none\")");
      runs_.push_back({std::move(k), start + j, 1});
    }
  }
}

bool ReadHdf5::next(SourceContext& ctx) {
  if (next_ >= total_) return false;
  const std::size_t i = next_++;  // advanced first: a --keep-going run skips an unreadable item
  h5::Quiet quiet;
  Item item;
  try {
    if (kind_ == kind_series) {
      item = read_frame(i);
    } else if (kind_ == layout::kind_arrays) {
      item = read_array(arrays_[i]);
    } else if (split_by_key_) {
      item.meta.key = runs_[i].key;
      item.value = read_rows(runs_[i].start, runs_[i].rows, false);
    } else {
      item.meta.key = dataset_;
      item.value = read_rows(0, table_rows_, true);
    }
  } catch (const Error& e) {
    throw Error(where() + ": " + e.what());
  }
  ctx.emit("data", std::move(item));
  return next_ < total_;
}

Item ReadHdf5::read_array(const std::string& path) const {
  const std::string what = "dataset '" + path + "'";
  h5::Id ds = h5::check(H5Dopen2(group_, path.c_str(), H5P_DEFAULT), H5Dclose, "cannot open " + what);
  h5::Id type = h5::check(H5Dget_type(ds), H5Tclose, "cannot read the type of " + what);
  const auto dtype = h5::dtype_of(type);
  if (!dtype) throw Error(what + " does not hold integers or floats");
  h5::Id space = h5::check(H5Dget_space(ds), H5Sclose, "cannot read the shape of " + what);
  const int ndim = H5Sget_simple_extent_ndims(space);
  if (ndim < 0 || ndim > max_ndim)
    throw Error(what + " has " + std::to_string(ndim) + " dimensions; flowd arrays have at most " + std::to_string(max_ndim));
  std::vector<hsize_t> dims(static_cast<std::size_t>(ndim));
  if (ndim > 0 && H5Sget_simple_extent_dims(space, dims.data(), nullptr) < 0)
    throw Error("cannot read the shape of " + what + ": " + h5::last_error());
  std::vector<std::int64_t> shape(dims.begin(), dims.end());
  Array a = Array::uninitialized(*dtype, shape);
  if (a.numel() > 0)
    h5::check(H5Dread(ds, h5::native_type(*dtype), H5S_ALL, H5S_ALL, H5P_DEFAULT, a.raw()), "cannot read " + what);

  Item item;
  item.meta.key = h5::string_attr(ds, layout::key_attr).value_or(path);
  item.meta.version = h5::int_attr(ds, layout::version_attr).value_or(0);
  item.meta.timestamp = h5::int_attr(ds, layout::timestamp_attr).value_or(0);
  item.meta.bbox = box_from(h5::ints_attr(ds, layout::bbox_attr), what + " attribute 'bbox'");
  item.meta.core = box_from(h5::ints_attr(ds, layout::core_attr), what + " attribute 'core'");
  if (const auto attrs = h5::string_attr(ds, layout::attrs_attr)) {
    try {
      item.meta.attrs = Json::parse(*attrs);
    } catch (const Json::parse_error& e) {
      throw Error(what + " attribute 'attrs' is not JSON: " + e.what());
    }
  }
  item.value = std::move(a);
  return item;
}

Table ReadHdf5::read_rows(hsize_t start, hsize_t rows, bool with_key) const {
  Table out;
  for (std::size_t i = with_key ? 0 : 1; i < columns_.size(); ++i) {
    const TableColumn& c = columns_[i];
    switch (c.type) {
      case ColumnType::u8: read_numeric<std::uint8_t>(out, c.name, c.dataset, c.type, start, rows); break;
      case ColumnType::i32: read_numeric<std::int32_t>(out, c.name, c.dataset, c.type, start, rows); break;
      case ColumnType::i64: read_numeric<std::int64_t>(out, c.name, c.dataset, c.type, start, rows); break;
      case ColumnType::f32: read_numeric<float>(out, c.name, c.dataset, c.type, start, rows); break;
      case ColumnType::f64: read_numeric<double>(out, c.name, c.dataset, c.type, start, rows); break;
      case ColumnType::string: {
        auto& v = out.add_column<std::string>(c.name);
        if (rows == 0) break;
        h5::StringBuffer buf(rows);
        h5::read_rows(c.dataset, c.strings, start, rows, buf.data());
        v.reserve(rows);
        for (hsize_t j = 0; j < rows; ++j) v.push_back(buf.at(j));
        break;
      }
    }
  }
  return out;
}

}  // namespace flowd::io
