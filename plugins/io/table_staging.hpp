#pragma once
// The tables one io.write_hdf5 stage receives: their rows are staged in a
// temporary HDF5 file as they arrive (so memory does not grow with the run),
// then copied into the output in item-key order, one item at a time. Rows
// are gathered in memory up to about 1 MiB before they go to the staging
// file together: growing and writing ~100 columns for each item's few rows
// cost a millisecond per item (a 512² tile's whole job is ~60 ms).
#include <string>
#include <unordered_set>
#include <vector>

#include <hdf5.h>

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

  // Stages an item's rows. Throws flowd::Error for a key already staged.
  // When writing the gathered rows to the staging file fails, the rows of
  // earlier items are lost too: this call and every later one throw that
  // error (the output cannot be completed).
  void append(const std::string& key, const Table& table);

  // Writes item_key and every column into `group` (and the group's
  // "columns" attribute): rows ordered by key_less of their item key, each
  // item's rows in arrival order. Gzip at `compression` (0: none) for
  // columns of at least 4096 rows.
  void write_ordered(hid_t group, int compression);

  // Writes the gathered rows, then closes the staging datasets, throwing
  // flowd::Error if HDF5 cannot (their last data is written then).
  void close();

private:
  struct Segment {
    std::string key;
    hsize_t offset;
    hsize_t rows;
  };
  // Rows [from, from + rows) of the staging datasets that go to rows
  // [to, to + rows) of the output.
  struct Stretch {
    hsize_t from, to, rows;
  };
  // The copies write_ordered() makes, for segments in output `order`:
  // segments next to each other in both files (items that arrived in key
  // order, the usual case) are copied together.
  std::vector<Stretch> copy_stretches(const std::vector<std::size_t>& order) const;

  // Writes the gathered rows to the staging datasets. On failure the
  // staging is broken for good (broken_ says why) and this throws.
  void flush();
  void check_usable() const;

  Table schema_;  // the columns, no rows
  h5::Id string_type_;
  std::vector<h5::Id> staged_;  // one per column
  std::vector<Segment> segments_;
  std::unordered_set<std::string> keys_;
  hsize_t rows_ = 0;  // rows appended, gathered ones included
  // Rows appended but not yet in the staging datasets: the last
  // rows_ - written_ (the schema's columns).
  Table gathered_;
  std::size_t gathered_bytes_ = 0;
  hsize_t written_ = 0;
  std::string broken_;
};

}  // namespace flowd::io
