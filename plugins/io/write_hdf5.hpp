#pragma once
// io.write_hdf5: arrays (one dataset per item) or tables (rows of every item,
// in key order) into one HDF5 file, with the run's provenance as root
// attributes. Layout: docs/plugins/io.md.
#include <filesystem>
#include <optional>
#include <string>

#include "flowd/flowd.hpp"
#include "h5.hpp"
#include "table_staging.hpp"

namespace flowd::io {

class WriteHdf5 final : public Sink {
public:
  static OperatorSpec spec();
  explicit WriteHdf5(const Params& params);

  void open(SinkContext& ctx) override;
  void consume(SinkContext& ctx) override;
  void commit(SinkContext& ctx) override;
  void abort() noexcept override;

private:
  enum class Kind { none, arrays, table };

  void write_array(const Item& item);
  void stage_table(SinkContext& ctx, const Item& item);
  // Completes the file under its temporary name, ready to be renamed.
  void finish(SinkContext& ctx);
  // "'/data' in 'out.h5'", for messages.
  std::string where() const;

  std::filesystem::path path_;
  std::string dataset_;
  int compression_;
  // The temporary file. Arrays are written into it and it becomes the output
  // (SinkContext::stage_output); table rows are staged in a scratch file
  // instead, read back in key order into the output at commit.
  std::filesystem::path work_path_;
  h5::Id work_;
  Kind kind_ = Kind::none;
  std::optional<TableStaging> tables_;
};

}  // namespace flowd::io
