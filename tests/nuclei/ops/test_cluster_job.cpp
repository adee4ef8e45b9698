// workflows/nuclei.json on a coordinator and three worker processes gives
// exactly what one process gives: the same label image bytes and the same
// feature rows.
#include <hdf5.h>

#include <algorithm>
#include <map>

#include "nuclei_support.hpp"
#include "support/cli.hpp"

using namespace flowd;

namespace {

// Every numeric dataset of `group` as rows (one vector per row, columns in
// name order), sorted: the sink appends rows in arrival order, which differs
// between runs.
std::vector<std::vector<double>> sorted_rows(const std::filesystem::path& h5, const char* group) {
  std::map<std::string, std::vector<double>> columns;
  const hid_t f = H5Fopen(h5.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) return {};
  const hid_t g = H5Gopen2(f, group, H5P_DEFAULT);
  hsize_t n = 0;
  H5Gget_num_objs(g, &n);
  for (hsize_t i = 0; i < n; ++i) {
    char name[256] = {};
    H5Gget_objname_by_idx(g, i, name, sizeof name);
    const hid_t d = H5Dopen2(g, name, H5P_DEFAULT);
    if (d < 0) continue;
    const hid_t t = H5Dget_type(d);
    if (H5Tget_class(t) == H5T_INTEGER || H5Tget_class(t) == H5T_FLOAT) {
      const hid_t s = H5Dget_space(d);
      hsize_t dims[2] = {0, 0};
      const int rank = H5Sget_simple_extent_dims(s, dims, nullptr);
      std::vector<double> v(rank == 2 ? dims[0] * dims[1] : dims[0]);
      H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data());
      if (rank == 1) columns[name] = std::move(v);
      H5Sclose(s);
    }
    H5Tclose(t);
    H5Dclose(d);
  }
  H5Gclose(g);
  H5Fclose(f);
  std::vector<std::vector<double>> rows;
  const std::size_t count = columns.empty() ? 0 : columns.begin()->second.size();
  for (std::size_t r = 0; r < count; ++r) {
    std::vector<double> row;
    for (const auto& [name, col] : columns) row.push_back(r < col.size() ? col[r] : -1);
    rows.push_back(std::move(row));
  }
  std::sort(rows.begin(), rows.end());
  return rows;
}

}  // namespace

TEST(NucleiClusterJob, ThreeWorkerProcessesGiveTheOutputsOfOneProcess) {
  const auto dir = test::scratch();
  const std::string input = "synthetic:hne?width=2200&height=1500&count=2&seed=5";
  const std::string wf = std::string(FLOWD_SOURCE_DIR) + "/workflows/nuclei.json";
  auto run = [&](const std::string& out, std::vector<std::string> extra) {
    std::vector<std::string> args{wf, "--set", "input=" + input, "--set", "output=" + (dir / out).string(), "--gpu",
                                  "none", "--no-progress", "--no-perf-model"};
    args.insert(args.end(), extra.begin(), extra.end());
    return test::flowd_cmd(dir, args);
  };
  const auto one = run("one", {"--cpu", "2"});
  ASSERT_EQ(one.code, 0) << one.err;
  const auto three = run("three", {"--workers", "3", "--worker-cpus", "1"});
  ASSERT_EQ(three.code, 0) << three.err;
  for (const char* image : {"hne-0.png", "hne-1.png"}) {
    const std::string a = test::slurp(dir / "one/labels" / image), b = test::slurp(dir / "three/labels" / image);
    ASSERT_FALSE(a.empty()) << image;
    EXPECT_TRUE(a == b) << image << " differs";
    EXPECT_TRUE(test::slurp(dir / "one/overlay" / image) == test::slurp(dir / "three/overlay" / image)) << image;
  }
  const auto rows_one = sorted_rows(dir / "one/features.h5", "/nuclei");
  ASSERT_GT(rows_one.size(), 50u);
  EXPECT_EQ(sorted_rows(dir / "three/features.h5", "/nuclei"), rows_one);
}
