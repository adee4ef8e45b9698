#include "table_staging.hpp"

#include <algorithm>
#include <cstddef>
#include <numeric>
#include <type_traits>

#include "hdf5_layout.hpp"

namespace flowd::io {

namespace {

// Staging chunks are small: rows are read back one item at a time in key
// order, and a small chunk wastes little of the per-dataset chunk cache (1 MiB).
constexpr std::size_t staging_chunk_bytes = 64 * 1024;
// Output chunks stay well below the chunk cache so that writing one item's
// rows into a chunk never rereads and recompresses it.
constexpr std::size_t output_chunk_bytes = 256 * 1024;
constexpr hsize_t compress_min_rows = 4096;
constexpr std::size_t string_bytes = 16;  // a variable-length string's size inside a dataset
// Rows gathered in memory before they are written to the staging file.
constexpr std::size_t gather_bytes = 1024 * 1024;
// Rows copied from the staging file to the output at once (at most 1 MiB of
// 16-byte values).
constexpr hsize_t copy_rows = 65536;

std::size_t element_bytes(ColumnType t) {
  switch (t) {
    case ColumnType::u8: return 1;
    case ColumnType::i32:
    case ColumnType::f32: return 4;
    case ColumnType::i64:
    case ColumnType::f64: return 8;
    case ColumnType::string: return string_bytes;
  }
  return 8;
}

hsize_t chunk_rows(std::size_t budget, std::size_t element) { return std::max<hsize_t>(1, budget / element); }

// The column's values as HDF5 reads them from memory; strings become
// pointers kept in `strings`.
const void* column_buffer(const Column& c, std::vector<const char*>& strings) {
  return std::visit(
      [&](const auto& v) -> const void* {
        using T = typename std::decay_t<decltype(v)>::value_type;
        if constexpr (std::is_same_v<T, std::string>) {
          strings.clear();
          for (const auto& s : v)
            strings.push_back(s.c_str());
          return strings.data();
        } else {
          return v.data();
        }
      },
      c.data);
}

void check_column_name(const std::string& name) {
  if (name == layout::key_column)
    throw Error(std::string("column '") + layout::key_column +
                "' is reserved: io.write_hdf5 stores each row's item key under that name; rename the column");
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos)
    throw Error("column name '" + name + "' cannot name an HDF5 dataset (empty, '.', '..' or containing '/')");
}

}  // namespace

TableStaging::TableStaging(hid_t file, const Table& first) : string_type_(h5::string_type()) {
  for (const auto& c : first.columns()) {
    check_column_name(c.name);
    std::visit([&](const auto& v) { schema_.add_column<typename std::decay_t<decltype(v)>::value_type>(c.name); },
               c.data);
  }
  gathered_ = schema_;
  h5::Id group = h5::create_group(file, "/staging");
  for (std::size_t i = 0; i < schema_.columns().size(); ++i) {
    const ColumnType t = schema_.columns()[i].type();
    hsize_t zero = 0, unlimited = H5S_UNLIMITED;
    h5::Id space = h5::check(H5Screate_simple(1, &zero, &unlimited), H5Sclose, "cannot create a dataspace");
    h5::Id dcpl = h5::check(H5Pcreate(H5P_DATASET_CREATE), H5Pclose, "cannot create a dataset property list");
    const hsize_t chunk = chunk_rows(staging_chunk_bytes, element_bytes(t));
    h5::check(H5Pset_chunk(dcpl, 1, &chunk), "cannot set the staging chunk size");
    const hid_t type = t == ColumnType::string ? static_cast<hid_t>(string_type_) : h5::native_type(t);
    staged_.push_back(
        h5::check(H5Dcreate2(group, ("c" + std::to_string(i)).c_str(), type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT),
                  H5Dclose, "cannot create a staging dataset"));
  }
}

void TableStaging::check_usable() const {
  if (!broken_.empty()) throw Error(broken_);
}

void TableStaging::append(const std::string& key, const Table& table) {
  check_usable();
  if (keys_.contains(key))
    throw Error("duplicate item key '" + key + "': each item stored as table rows needs its own key");
  const hsize_t n = table.rows();
  if (n > 0) {
    gathered_.append(table);
    for (const auto& c : table.columns())
      gathered_bytes_ += static_cast<std::size_t>(n) * element_bytes(c.type());
  }
  segments_.push_back({key, rows_, n});
  keys_.insert(key);
  rows_ += n;
  if (gathered_bytes_ >= gather_bytes) flush();
}

void TableStaging::flush() {
  check_usable();
  const hsize_t n = rows_ - written_;
  if (n == 0) return;
  try {
    const hsize_t end = rows_;
    std::vector<const char*> strings;
    for (std::size_t i = 0; i < staged_.size(); ++i) {
      const Column& c = gathered_.columns()[i];
      h5::check(H5Dset_extent(staged_[i], &end), "cannot grow staging column '" + c.name + "'");
      const hid_t type = c.type() == ColumnType::string ? static_cast<hid_t>(string_type_) : h5::native_type(c.type());
      h5::write_rows(staged_[i], type, written_, n, column_buffer(c, strings));
    }
  } catch (const Error& e) {
    broken_ = e.what();
    throw;
  }
  written_ = rows_;
  gathered_ = schema_;
  gathered_bytes_ = 0;
}

std::vector<TableStaging::Stretch> TableStaging::copy_stretches(const std::vector<std::size_t>& order) const {
  std::vector<Stretch> out;
  hsize_t cursor = 0;
  for (const std::size_t s : order) {
    const Segment& seg = segments_[s];
    if (seg.rows == 0) continue;
    if (!out.empty() && out.back().from + out.back().rows == seg.offset)
      out.back().rows += seg.rows;
    else
      out.push_back({seg.offset, cursor, seg.rows});
    cursor += seg.rows;
  }
  // At most copy_rows each, so a stretch's values fit a small buffer.
  std::vector<Stretch> cut;
  for (const Stretch& st : out)
    for (hsize_t done = 0; done < st.rows; done += copy_rows)
      cut.push_back({st.from + done, st.to + done, std::min<hsize_t>(copy_rows, st.rows - done)});
  return cut;
}

void TableStaging::write_ordered(hid_t group, int compression) {
  flush();
  std::vector<std::size_t> order(segments_.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return key_less(segments_[a].key, segments_[b].key); });

  std::vector<std::string> names{layout::key_column};
  for (const auto& c : schema_.columns())
    names.push_back(c.name);
  h5::set_attr(group, layout::columns_attr, names);

  auto create = [&](const std::string& name, hid_t type, ColumnType t) {
    hsize_t dims = rows_;
    h5::Id space = h5::check(H5Screate_simple(1, &dims, nullptr), H5Sclose, "cannot create a dataspace");
    h5::Id dcpl = h5::check(H5Pcreate(H5P_DATASET_CREATE), H5Pclose, "cannot create a dataset property list");
    if (compression > 0 && rows_ >= compress_min_rows) {
      const hsize_t chunk = std::min(rows_, chunk_rows(output_chunk_bytes, element_bytes(t)));
      h5::check(H5Pset_chunk(dcpl, 1, &chunk), "cannot set the chunk size of column '" + name + "'");
      if (t != ColumnType::string && t != ColumnType::u8) h5::check(H5Pset_shuffle(dcpl), "cannot enable shuffling");
      h5::check(H5Pset_deflate(dcpl, static_cast<unsigned>(compression)), "cannot enable gzip");
    }
    return h5::check(H5Dcreate2(group, name.c_str(), type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT), H5Dclose,
                     "cannot create column '" + name + "'");
  };
  auto type_of = [&](ColumnType t) {
    return t == ColumnType::string ? static_cast<hid_t>(string_type_) : h5::native_type(t);
  };

  h5::Id out_key = create(layout::key_column, string_type_, ColumnType::string);
  std::vector<h5::Id> out;
  for (const auto& c : schema_.columns())
    out.push_back(create(c.name, type_of(c.type()), c.type()));

  // The item keys, a block of rows at a time.
  {
    std::vector<const char*> keys;
    hsize_t cursor = 0;
    const auto put = [&] {
      h5::write_rows(out_key, string_type_, cursor, keys.size(), keys.data());
      cursor += keys.size();
      keys.clear();
    };
    for (const std::size_t s : order)
      for (hsize_t r = 0; r < segments_[s].rows; ++r) {
        keys.push_back(segments_[s].key.c_str());
        if (keys.size() == copy_rows) put();
      }
    if (!keys.empty()) put();
  }
  // Every column a stretch at a time: one read and one write per stretch,
  // not per item (HDF5 costs ~15 µs a call; a run of 500 tiles has 500 items
  // of ~100 columns).
  const auto stretches = copy_stretches(order);
  std::vector<std::byte> values;
  for (std::size_t i = 0; i < out.size(); ++i) {
    const ColumnType t = schema_.columns()[i].type();
    for (const Stretch& st : stretches) {
      if (t == ColumnType::string) {
        h5::StringBuffer strings(st.rows);
        h5::read_rows(staged_[i], string_type_, st.from, st.rows, strings.data());
        h5::write_rows(out[i], string_type_, st.to, st.rows, strings.data());
      } else {
        values.resize(st.rows * element_bytes(t));
        h5::read_rows(staged_[i], type_of(t), st.from, st.rows, values.data());
        h5::write_rows(out[i], type_of(t), st.to, st.rows, values.data());
      }
    }
  }
  // Closed here, checked: a dataset's buffered data is written when it closes.
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i].close("cannot write column '" + schema_.columns()[i].name + "'");
  out_key.close(std::string("cannot write column '") + layout::key_column + "'");
}

void TableStaging::close() {
  flush();
  for (auto& d : staged_)
    d.close("cannot write the staging file");
  staged_.clear();
}

}  // namespace flowd::io
