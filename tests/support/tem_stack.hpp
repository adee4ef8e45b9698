#pragma once
// A generated TEM series (tools/tem) as the 3-D u16 dataset "stack" of an
// HDF5 file, as a microscope's software writes one: for tests of
// docs/examples/registration-hdf5.json. Needs flowd_tem and HDF5.
#include <cstdint>
#include <filesystem>
#include <vector>

#include <hdf5.h>
#include <opencv2/core.hpp>

#include <gtest/gtest.h>

#include "tem/generate.hpp"

namespace flowd::test {

inline void write_series_h5(const tem::Params& p, const std::filesystem::path& file) {
  std::vector<std::uint16_t> data;
  for (int k = 0; k < p.frames; ++k) {
    const cv::Mat m = tem::generate(p, k);
    ASSERT_EQ(m.type(), CV_16UC1);
    for (int r = 0; r < m.rows; ++r)
      data.insert(data.end(), m.ptr<std::uint16_t>(r), m.ptr<std::uint16_t>(r) + m.cols);
  }
  const hsize_t dims[3] = {static_cast<hsize_t>(p.frames), static_cast<hsize_t>(p.height),
                           static_cast<hsize_t>(p.width)};
  const hid_t f = H5Fcreate(file.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  const hid_t space = H5Screate_simple(3, dims, nullptr);
  const hid_t ds = H5Dcreate2(f, "stack", H5T_NATIVE_UINT16, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(H5Dwrite(ds, H5T_NATIVE_UINT16, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data()), 0);
  H5Dclose(ds);
  H5Sclose(space);
  H5Fclose(f);
}

}  // namespace flowd::test
