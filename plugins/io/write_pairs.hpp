#pragma once
// io.write_pairs: the score table of an all-pairs stage (flowd::AllPairs) as
// a CSV file, an HDF5 file of rows x cols score matrices, and/or a heat map
// PNG whose rows and columns are ordered by an average-linkage clustering.
// Layout and rules: docs/plugins/io.md.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "flowd/flowd.hpp"

namespace flowd::io {

class WritePairs final : public Sink {
public:
  static OperatorSpec spec();
  explicit WritePairs(const Params& params);

  void open(SinkContext& ctx) override;
  void consume(SinkContext& ctx) override;
  void commit(SinkContext& ctx) override;
  void abort() noexcept override;

  enum class Shape { triangle, triangle_with_diagonal, rectangle };

  // The checked view of the one input item (pointers into it).
  struct Scores {
    std::vector<std::string> rows, cols, names;
    Shape shape = Shape::triangle;
    std::string shape_name;
    const std::vector<std::int64_t>* a = nullptr;
    const std::vector<std::int64_t>* b = nullptr;
    std::vector<const std::vector<double>*> values;  // one column per name
    std::size_t heatmap_score = 0;                   // index into names
  };

private:
  std::string who(const SinkContext& ctx) const;
  void write_csv(SinkContext& ctx) const;
  void write_hdf5(SinkContext& ctx, const std::vector<std::int64_t>* row_order,
                  const std::vector<std::int64_t>* col_order) const;

  std::filesystem::path csv_, hdf5_, heatmap_;
  std::string heatmap_score_;
  bool heatmap_log_;
  std::string a_name_, b_name_;

  std::optional<Item> item_;  // the score table, kept from consume() to commit()
  Scores scores_;
};

}  // namespace flowd::io
