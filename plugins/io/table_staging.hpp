#pragma once
// The tables one io.write_hdf5 stage receives: their rows are staged in a
// temporary HDF5 file as they arrive (so memory does not grow with the run),
// then copied into the output in item-key order, one item at a time.
#include <hdf5.h>

#include <string>
#include <unordered_set>
#include <vector>

#include "flowd/flowd.hpp"
#include "h5.hpp"

namespace flowd::io {

class TableStaging {
public:
  // Creates one extendible dataset per column of `first` under /staging in
  // `file`. Throws flowd::Error when a column name cannot be an HDF5
  // dataset name or is the reserved "item_key".
  TableStaging(hid_t file, const Table& first);

  bool same_schema(const Table& t) const noexcept { return schema_.same_schema(t); }
  std::string schema() const { return schema_.schema(); }

  // Stages an item's rows. Throws flowd::Error for a key already staged;
  // a failed call leaves nothing behind.
  void append(const std::string& key, const Table& table);

  // Writes item_key and every column into `group` (and the group's
  // "columns" attribute): rows ordered by key_less of their item key, each
  // item's rows in arrival order. Gzip at `compression` (0: none) for
  // columns of at least 4096 rows.
  void write_ordered(hid_t group, int compression) const;

  // Closes the staging datasets, throwing flowd::Error if HDF5 cannot (their
  // last data is written then).
  void close();

private:
  struct Segment {
    std::string key;
    hsize_t offset;
    hsize_t rows;
  };

  Table schema_;  // the columns, no rows
  h5::Id string_type_;
  std::vector<h5::Id> staged_;  // one per column
  std::vector<Segment> segments_;
  std::unordered_set<std::string> keys_;
  hsize_t rows_ = 0;
};

}  // namespace flowd::io
