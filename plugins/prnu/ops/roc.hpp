#pragma once
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include <flowd/flowd.hpp>

namespace flowd::prnu {

// The area under the ROC curve of scores with known labels (Mann–Whitney,
// ties counted half), and the curve's points (false, true positive rate)
// from the highest score down.
struct Roc {
  double auc = 0;
  std::vector<std::pair<double, double>> curve;
};
Roc roc_of(const std::vector<double>& scores, const std::vector<bool>& positive);

// prnu.roc (sink): ROC curves and AUC of every score of an all-pairs table
// whose keys name their cameras: a pair is "same camera" when the camera of
// its two keys agree — a key's camera is its first capture by `group` (the
// name up to its last '_' by default), or the key itself for a fingerprint
// (a rectangle's rows). Writes the curves as a PNG and logs the AUCs.
class RocSink final : public Sink {
public:
  static OperatorSpec spec();
  explicit RocSink(const Params& p);
  void open(SinkContext& ctx) override;
  void consume(SinkContext& ctx) override;
  void commit(SinkContext& ctx) override;

private:
  std::string png_;
  std::regex group_;
  std::string group_text_;
  std::optional<Item> table_;
};

}  // namespace flowd::prnu
