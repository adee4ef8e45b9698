#pragma once
// Shared by the io tests: operators from the built plugin, items, images on
// disk and a few HDF5 C API readers for inspecting written files.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

#include "flowd/flowd.hpp"
#include "flowd/opencv.hpp"
#include "runtime/harness.hpp"
#include "support/helpers.hpp"

namespace flowd::iotest {

namespace fs = std::filesystem;
using Harness = runtime::OperatorHarness;

inline plugin::Registry& io_registry() {
  static plugin::Registry reg = [] {
    plugin::Registry r({{FLOWD_TEST_PLUGIN_DIR, "test", true}}, test::quiet_log());
    r.scan();
    return r;
  }();
  return reg;
}

inline Harness harness(const std::string& op, const Json& params) {
  return Harness(io_registry().open(op), params, test::quiet_log(), "stage-under-test");
}

inline std::vector<Item> items_of(Harness::Emitted emitted) {
  std::vector<Item> out;
  for (auto& [port, item] : emitted) out.push_back(std::move(item));
  return out;
}

inline std::vector<std::string> keys_of(const std::vector<Item>& items) {
  std::vector<std::string> out;
  for (const auto& i : items) out.push_back(i.meta.key);
  return out;
}

// The message of what `f` throws ("" when it does not throw).
template <class F> std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// The ParamError constructing operator `op` with `params` throws, as
// "param: message" ("" when it does not throw).
inline std::string param_error_of(const std::string& op, const Json& params) {
  try {
    harness(op, params);
  } catch (const ParamError& e) {
    return e.param() + ": " + e.what();
  } catch (const std::exception& e) {
    return std::string("not a ParamError: ") + e.what();
  }
  return "";
}

inline Item array_item(std::string key, Array a) {
  Item i;
  i.meta.key = std::move(key);
  i.value = std::move(a);
  return i;
}

inline Item table_item(std::string key, Table t) {
  Item i;
  i.meta.key = std::move(key);
  i.value = std::move(t);
  return i;
}

// A deep copy of an array as a cv::Mat, to compare pixels.
inline cv::Mat mat_copy(const Array& a) { return as_mat(a.contiguous()).clone(); }

inline bool same_pixels(const cv::Mat& a, const cv::Mat& b) {
  if (a.size() != b.size() || a.type() != b.type()) return false;
  cv::Mat diff;
  cv::compare(a.reshape(1), b.reshape(1), diff, cv::CMP_NE);
  return cv::countNonZero(diff) == 0;
}

// Every file (not folder) below `dir`, relative, sorted.
inline std::vector<std::string> files_below(const fs::path& dir) {
  std::vector<std::string> out;
  if (!fs::exists(dir)) return out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (!e.is_directory()) out.push_back(fs::relative(e.path(), dir).generic_string());
  std::sort(out.begin(), out.end());
  return out;
}

inline void write_bytes(const fs::path& p, const std::string& bytes) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << bytes;
}

// ---- HDF5 inspection (C API) ----

class H5 {
public:
  H5(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  ~H5() {
    if (id_ >= 0) close_(id_);
  }
  H5(const H5&) = delete;
  H5& operator=(const H5&) = delete;
  operator hid_t() const { return id_; }  // NOLINT(google-explicit-constructor)
  bool ok() const { return id_ >= 0; }

private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

inline H5 open_h5(const fs::path& p) { return H5(H5Fopen(p.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose); }

inline bool h5_has(hid_t loc, const std::string& path) {
  std::size_t pos = path.starts_with('/') ? 1 : 0;
  while (true) {
    const auto slash = path.find('/', pos);
    if (H5Lexists(loc, path.substr(0, slash).c_str(), H5P_DEFAULT) <= 0) return false;
    if (slash == std::string::npos) return true;
    pos = slash + 1;
  }
}

inline std::optional<std::string> h5_string_attr(hid_t loc, const std::string& obj, const char* name) {
  if (H5Aexists_by_name(loc, obj.c_str(), name, H5P_DEFAULT) <= 0) return std::nullopt;
  H5 a(H5Aopen_by_name(loc, obj.c_str(), name, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  H5 t(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(t, H5T_VARIABLE);
  H5Tset_cset(t, H5T_CSET_UTF8);
  char* p = nullptr;
  if (H5Aread(a, t, &p) < 0) return std::nullopt;
  std::string s(p ? p : "");
  H5free_memory(p);
  return s;
}

inline std::vector<std::string> h5_strings_attr(hid_t loc, const std::string& obj, const char* name) {
  H5 a(H5Aopen_by_name(loc, obj.c_str(), name, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  H5 space(H5Aget_space(a), H5Sclose);
  std::vector<char*> p(static_cast<std::size_t>(H5Sget_simple_extent_npoints(space)));
  H5 t(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(t, H5T_VARIABLE);
  H5Tset_cset(t, H5T_CSET_UTF8);
  H5Aread(a, t, p.data());
  std::vector<std::string> out;
  for (char* s : p) {
    out.emplace_back(s ? s : "");
    H5free_memory(s);
  }
  return out;
}

inline std::vector<std::int64_t> h5_ints_attr(hid_t loc, const std::string& obj, const char* name) {
  H5 a(H5Aopen_by_name(loc, obj.c_str(), name, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  H5 space(H5Aget_space(a), H5Sclose);
  std::vector<std::int64_t> v(static_cast<std::size_t>(H5Sget_simple_extent_npoints(space)));
  H5Aread(a, H5T_NATIVE_INT64, v.data());
  return v;
}

inline std::vector<std::string> h5_string_column(hid_t loc, const std::string& path) {
  H5 ds(H5Dopen2(loc, path.c_str(), H5P_DEFAULT), H5Dclose);
  H5 space(H5Dget_space(ds), H5Sclose);
  std::vector<char*> p(static_cast<std::size_t>(H5Sget_simple_extent_npoints(space)));
  H5 t(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(t, H5T_VARIABLE);
  H5Tset_cset(t, H5T_CSET_UTF8);
  if (!p.empty()) H5Dread(ds, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, p.data());
  std::vector<std::string> out;
  for (char* s : p) {
    out.emplace_back(s ? s : "");
    H5free_memory(s);
  }
  return out;
}

template <class T> std::vector<T> h5_column(hid_t loc, const std::string& path, hid_t mem_type) {
  H5 ds(H5Dopen2(loc, path.c_str(), H5P_DEFAULT), H5Dclose);
  H5 space(H5Dget_space(ds), H5Sclose);
  std::vector<T> v(static_cast<std::size_t>(H5Sget_simple_extent_npoints(space)));
  if (!v.empty()) H5Dread(ds, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data());
  return v;
}

}  // namespace flowd::iotest
