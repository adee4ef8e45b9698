#pragma once
// io.read_hdf5: the items io.write_hdf5 stored, so one workflow can feed
// another. Arrays come back one per dataset with their metadata; tables one
// per item key, or whole. Also a plain 3-D dataset (frames, rows, columns),
// as microscopes and other tools write image series: one 2-D item per frame.
#include <hdf5.h>

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "flowd/flowd.hpp"
#include "h5.hpp"

namespace flowd::io {

class ReadHdf5 final : public Source {
public:
  static OperatorSpec spec();
  explicit ReadHdf5(const Params& params);

  void open(SourceContext& ctx) override;
  bool next(SourceContext& ctx) override;

private:
  struct TableColumn {
    std::string name;
    ColumnType type;
    h5::Id dataset;
    h5::Id strings;  // string columns: the memory type matching the file's character set
  };
  struct Run {  // the rows of one item key
    std::string key;
    hsize_t start;
    hsize_t rows;
  };

  void list_arrays(hid_t group, const std::string& prefix);
  void open_series();
  Item read_frame(std::size_t index) const;
  void open_table();
  void find_runs();
  Item read_array(const std::string& path) const;
  Table read_rows(hsize_t start, hsize_t rows, bool with_key) const;
  // "HDF5 file 'x.h5', '/data'", for messages.
  std::string where() const;

  std::filesystem::path path_;
  std::string dataset_;
  bool split_by_key_;

  h5::Id file_, group_;
  std::string kind_;
  std::vector<std::string> arrays_;  // dataset paths below the group, in key order
  h5::Id series_;                    // a 3-D dataset read frame by frame
  hsize_t series_dims_[3] = {0, 0, 0};
  DType series_dtype_ = DType::u8;
  std::vector<TableColumn> columns_;  // item_key first
  std::vector<Run> runs_;
  hsize_t table_rows_ = 0;
  std::size_t next_ = 0;
  std::size_t total_ = 0;
};

}  // namespace flowd::io
