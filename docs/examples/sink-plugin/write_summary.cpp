// example.write_summary: one line per item (key, version, what it holds),
// in key order, in `path`; and, with `per_item`, each JSON item as its own
// file under `dir`.
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <flowd/flowd.hpp>

class WriteSummary final : public flowd::Sink {
public:
  static flowd::OperatorSpec spec() {
    flowd::OperatorSpec s;
    s.name = "example.write_summary";
    s.doc = "One line per item, in key order; files appear only when the run succeeds";
    s.inputs = {{"in", "any", "anything"}};
    s.params = {
        flowd::ParamSpec::string("path").doc("the summary file"),
        flowd::ParamSpec::string("dir", "").doc("a folder for one .json file per JSON item; empty: none"),
    };
    return s;
  }
  explicit WriteSummary(const flowd::Params& p)
      : path_(p.get<std::string>("path")), dir_(p.get<std::string>("dir")) {
    if (path_.filename().empty()) throw flowd::ParamError("path", "path must name a file");
  }

  // Before any work: say where this sink writes. An unwritable place, or one
  // holding files flowd did not write, fails the run here, in milliseconds.
  void open(flowd::SinkContext& ctx) override {
    ctx.output_file(path_);
    if (!dir_.empty()) ctx.output_folder(dir_);
  }

  // One item at a time (never concurrently for one stage), in no particular
  // order: sort what must be ordered at commit.
  void consume(flowd::SinkContext& ctx) override {
    const flowd::Item& item = ctx.input("in");
    lines_.push_back({item.meta.key, item.meta.key + "\t" + std::to_string(item.meta.version) + "\t" +
                                         flowd::describe(item.value) + "\n"});
    if (!dir_.empty() && flowd::kind_of(item.value) == flowd::ValueKind::json) {
      const std::string text = item.json().dump(2) + "\n";
      // Written under a temporary name now; renamed into place at the end.
      ctx.write_output(dir_ / (item.meta.key + ".json"),
                       {reinterpret_cast<const std::uint8_t*>(text.data()), text.size()});
    }
  }

  // The run succeeded: write what was kept back. Any library can write a
  // staged file; here the bytes are small, so write_output does it all.
  void commit(flowd::SinkContext& ctx) override {
    std::sort(lines_.begin(), lines_.end(), [](const auto& a, const auto& b) { return flowd::key_less(a.first, b.first); });
    std::string text = "# workflow sha256 " + ctx.provenance().value("workflow_sha256", std::string("?")) + "\n";
    for (const auto& [key, line] : lines_) text += line;
    ctx.write_output(path_, {reinterpret_cast<const std::uint8_t*>(text.data()), text.size()});
  }

  // The run failed or was interrupted: the engine removes the staged files;
  // drop what is held in memory.
  void abort() noexcept override { lines_.clear(); }

private:
  std::filesystem::path path_, dir_;
  std::vector<std::pair<std::string, std::string>> lines_;  // (key, line)
};

FLOWD_PLUGIN("summary", "1.0.0", "Writes a summary of items", WriteSummary)
