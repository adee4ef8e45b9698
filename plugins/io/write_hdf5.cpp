#include "write_hdf5.hpp"

#include <algorithm>
#include <array>

#include "hdf5_layout.hpp"

namespace flowd::io {

namespace fs = std::filesystem;

namespace {

constexpr std::int64_t compress_min_elements = 4096;
constexpr std::size_t chunk_budget_bytes = 1024 * 1024;

std::vector<std::string> split_key(const std::string& key) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    const auto slash = key.find('/', start);
    parts.push_back(key.substr(start, slash == std::string::npos ? std::string::npos : slash - start));
    if (slash == std::string::npos) return parts;
    start = slash + 1;
  }
}

// Chunks of at most 1 MiB: the whole array, halving its largest dimension
// until it fits.
std::vector<hsize_t> chunk_shape(const std::vector<hsize_t>& dims, std::size_t itemsize) {
  std::vector<hsize_t> chunk = dims;
  auto bytes = [&] {
    std::size_t n = itemsize;
    for (hsize_t d : chunk) n *= static_cast<std::size_t>(d);
    return n;
  };
  while (bytes() > chunk_budget_bytes) {
    auto largest = std::max_element(chunk.begin(), chunk.end());
    if (*largest <= 1) break;
    *largest = (*largest + 1) / 2;
  }
  return chunk;
}

std::vector<std::int64_t> box_values(const Box& b) {
  std::vector<std::int64_t> v;
  for (int d = 0; d < b.ndim; ++d) v.push_back(b.origin[static_cast<std::size_t>(d)]);
  for (int d = 0; d < b.ndim; ++d) v.push_back(b.extent[static_cast<std::size_t>(d)]);
  return v;
}

void write_root_attributes(hid_t file, const Json& provenance) {
  h5::Id root = h5::check(H5Gopen2(file, "/", H5P_DEFAULT), H5Gclose, "cannot open the root group");
  for (const auto& [attr, key] : layout::root_attrs) {
    const auto it = provenance.find(key);
    if (it == provenance.end()) continue;
    h5::set_attr(root, attr, it->is_string() ? it->get<std::string>() : it->dump());
  }
  root.close("cannot close the root group");
}

}  // namespace

OperatorSpec WriteHdf5::spec() {
  OperatorSpec s;
  s.name = "io.write_hdf5";
  s.doc = "Stores arrays (one dataset per item) or tables (all rows, ordered by item key) in one HDF5 file with the "
          "run's provenance; the file appears only when the run succeeds";
  s.inputs = {{"data", "any", "arrays or tables (one kind per stage); JSON values are refused"}};
  s.params = {
      ParamSpec::string("path").doc("the .h5 file to write; replaced atomically at the end of the run"),
      ParamSpec::string("dataset", "data").doc("group that holds the items, e.g. data or results/nuclei (no leading '/')"),
      ParamSpec::integer("compression", 4).range(0, 9).doc(
          "gzip level for arrays and columns of at least 4096 elements; 0 stores them uncompressed"),
  };
  return s;
}

WriteHdf5::WriteHdf5(const Params& params)
    : path_(params.get<std::string>("path")),
      dataset_(params.get<std::string>("dataset")),
      compression_(static_cast<int>(params.get<std::int64_t>("compression"))) {
  if (path_.empty() || path_.filename().empty()) throw ParamError("path", "path must name a file, got '" + path_.string() + "'");
  dataset_ = layout::dataset_param(dataset_);
}

std::string WriteHdf5::where() const { return "'/" + dataset_ + "' in '" + path_.string() + "'"; }

void WriteHdf5::open(SinkContext& ctx) {
  h5::Quiet quiet;
  ctx.output_file(path_);
  work_path_ = ctx.stage_output(path_);
  try {
    work_ = h5::create_file(work_path_);
  } catch (const Error& e) {
    throw Error("writing '" + path_.string() + "': " + e.what());
  }
}

void WriteHdf5::consume(SinkContext& ctx) {
  h5::Quiet quiet;
  const Item& item = ctx.input("data");
  const ValueKind kind = kind_of(item.value);
  if (kind != ValueKind::array && kind != ValueKind::table)
    throw Error("io.write_hdf5 stores arrays and tables; item '" + item.meta.key + "' holds " + describe(item.value) +
                " (output " + where() + ")");
  const Kind want = kind == ValueKind::array ? Kind::arrays : Kind::table;
  if (kind_ != Kind::none && kind_ != want)
    throw Error("item '" + item.meta.key + "' is " + (want == Kind::table ? "a table" : "an array") + " but " +
                where() + " already holds " + (kind_ == Kind::table ? "tables" : "arrays") +
                "; store arrays and tables with two io.write_hdf5 stages");
  if (want == Kind::arrays) write_array(item);
  else stage_table(ctx, item);
  kind_ = want;
}

void WriteHdf5::write_array(const Item& item) {
  const std::string& key = item.meta.key;
  const std::string at = "item '" + key + "' -> " + where() + ": ";
  const auto parts = split_key(key);
  for (const auto& p : parts)
    if (p.empty() || p == "." || p == "..")
      throw Error(at + "the key has an empty, '.' or '..' part and cannot name an HDF5 dataset");
  const std::string path = "/" + dataset_ + "/" + key;
  std::string prefix = "/" + dataset_;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    prefix += "/" + parts[i];
    const auto type = h5::object_type(work_, prefix);
    const bool last = i + 1 == parts.size();
    if (type == h5::ObjectType::none) break;
    if (last && type == h5::ObjectType::dataset) throw Error(at + "duplicate key: an item with this key is already stored");
    if (last) throw Error(at + "items with keys below '" + key + "/' are already stored there, so '" + key + "' cannot be");
    if (type != h5::ObjectType::group)
      throw Error(at + "item '" + prefix.substr(dataset_.size() + 2) + "' is already stored where this key needs a group");
  }

  const std::string attrs_text = item.meta.attrs.dump();  // may throw (invalid UTF-8): before anything is created
  const Array& in = item.array();
  if (!in.placement().host_accessible()) throw Error(at + "the array is on a device; the engine should have copied it");
  const Array a = in.contiguous();
  std::vector<hsize_t> dims;
  for (const auto d : a.shape()) dims.push_back(static_cast<hsize_t>(d));
  h5::Id space = a.ndim() == 0 ? h5::check(H5Screate(H5S_SCALAR), H5Sclose, at + "cannot create a dataspace")
                               : h5::check(H5Screate_simple(a.ndim(), dims.data(), nullptr), H5Sclose,
                                           at + "cannot create a dataspace");
  h5::Id dcpl = h5::check(H5Pcreate(H5P_DATASET_CREATE), H5Pclose, at + "cannot create a property list");
  if (compression_ > 0 && a.ndim() > 0 && a.numel() >= compress_min_elements) {
    const auto chunk = chunk_shape(dims, a.itemsize());
    h5::check(H5Pset_chunk(dcpl, a.ndim(), chunk.data()), at + "cannot set the chunk shape");
    if (a.itemsize() > 1) h5::check(H5Pset_shuffle(dcpl), at + "cannot enable shuffling");
    h5::check(H5Pset_deflate(dcpl, static_cast<unsigned>(compression_)), at + "cannot enable gzip");
  }
  h5::Id lcpl = h5::check(H5Pcreate(H5P_LINK_CREATE), H5Pclose, at + "cannot create a property list");
  h5::check(H5Pset_create_intermediate_group(lcpl, 1), at + "cannot request intermediate groups");
  const hid_t type = h5::native_type(a.dtype());
  h5::Id ds = h5::check(H5Dcreate2(work_, path.c_str(), type, space, lcpl, dcpl, H5P_DEFAULT), H5Dclose,
                        at + "cannot create dataset '" + path + "'");
  try {
    if (a.numel() > 0) h5::check(H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, a.raw()), "cannot write");
    h5::set_attr(ds, layout::key_attr, key);
    h5::set_attr(ds, layout::version_attr, item.meta.version);
    h5::set_attr(ds, layout::timestamp_attr, item.meta.timestamp);
    if (item.meta.bbox) h5::set_attr(ds, layout::bbox_attr, box_values(*item.meta.bbox));
    if (item.meta.core) h5::set_attr(ds, layout::core_attr, box_values(*item.meta.core));
    h5::set_attr(ds, layout::attrs_attr, attrs_text);
    ds.close("cannot write");  // its data reaches the file here (a full disk shows now)
  } catch (const std::exception& e) {
    ds.reset();
    H5Ldelete(work_, path.c_str(), H5P_DEFAULT);  // no half-written dataset stays in the file
    throw Error(at + e.what());
  }
}

void WriteHdf5::stage_table(SinkContext& ctx, const Item& item) {
  const Table& t = item.table();
  try {
    if (!tables_) {
      // Rows are staged in a scratch file; the output is written at commit.
      work_.close("cannot close the file");
      ctx.discard(work_path_);
      work_path_ = ctx.scratch_file(path_);
      work_ = h5::create_file(work_path_);
      tables_.emplace(work_, t);
    }
    if (!tables_->same_schema(t))
      throw Error("its columns (" + t.schema() + ") differ from the first table's (" + tables_->schema() +
                  "); every table stored in one group needs the same columns");
    tables_->append(item.meta.key, t);
  } catch (const Error& e) {
    throw Error("item '" + item.meta.key + "' -> " + where() + ": " + e.what());
  }
}

void WriteHdf5::commit(SinkContext& ctx) {
  h5::Quiet quiet;
  try {
    finish(ctx);
  } catch (const Error& e) {
    throw Error("writing '" + path_.string() + "': " + e.what());
  }
}

void WriteHdf5::finish(SinkContext& ctx) {
  const std::string group = "/" + dataset_;
  if (kind_ == Kind::table) {
    const fs::path final_path = ctx.stage_output(path_);
    h5::Id out = h5::create_file(final_path);
    write_root_attributes(out, ctx.provenance());
    h5::Id g = h5::create_group(out, group, /*track_order=*/true);
    h5::set_attr(g, layout::kind_attr, std::string(layout::kind_table));
    tables_->write_ordered(g, compression_);
    g.close("cannot close group " + group);
    out.close("cannot close the file");
    tables_->close();
    tables_.reset();
    work_.close("cannot close the staging file");
    ctx.discard(work_path_);
    return;
  }
  {
    h5::Id g = kind_ == Kind::none
                   ? h5::create_group(work_, group)
                   : h5::check(H5Gopen2(work_, group.c_str(), H5P_DEFAULT), H5Gclose, "cannot open group " + group);
    h5::set_attr(g, layout::kind_attr, std::string(kind_ == Kind::none ? layout::kind_empty : layout::kind_arrays));
    g.close("cannot close group " + group);
  }
  write_root_attributes(work_, ctx.provenance());
  work_.close("cannot close the file");
}

void WriteHdf5::abort() noexcept {
  h5::Quiet quiet;
  tables_.reset();
  work_.reset();
}

}  // namespace flowd::io
