#pragma once
// The nuclear map network of nuclei.segment's learned method (issue 39;
// trained by tools/train/nuclei): MODEL.onnx and its manifest MODEL.json,
// run on the CPU by OpenCV's DNN module. Loaded once per operator; each
// thread that runs it gets a network of its own from a pool (a cv::dnn::Net
// holds its buffers and must not run two inputs at once).
#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/dnn/dnn.hpp>

namespace flowd::nuclei {

// A model that cannot be used: what() names the file and says why.
class ModelError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

class NuclearMapModel {
public:
  // Reads MODEL.onnx and the MODEL.json beside it, and checks them: the
  // manifest's format and classes, and the network's outputs on the
  // manifest's check input against the probabilities the training
  // framework computed (within 1e-3). Throws ModelError naming the file.
  static std::shared_ptr<const NuclearMapModel> load(const std::filesystem::path& onnx);
  ~NuclearMapModel();
  NuclearMapModel(const NuclearMapModel&) = delete;
  NuclearMapModel& operator=(const NuclearMapModel&) = delete;

  const std::filesystem::path& path() const noexcept { return path_; }
  // The resolution the network was trained at, µm per pixel.
  double canonical_mpp() const noexcept { return canonical_mpp_; }
  // The largest difference, at the manifest's check points, between this
  // inference and the training framework's probabilities.
  double check_error() const noexcept { return check_error_; }

  // The class probabilities (background, interior, boundary) of every pixel
  // of an RGB u8 image of any size: three CV_32F planes of its size.
  std::array<cv::Mat, 3> probabilities(const cv::Mat& rgb) const;

private:
  NuclearMapModel() = default;
  std::unique_ptr<cv::dnn::Net> take() const;
  void give_back(std::unique_ptr<cv::dnn::Net> net) const;

  std::filesystem::path path_;
  std::vector<char> onnx_;  // to make a network for each thread that needs one
  double canonical_mpp_ = 0;
  double check_error_ = 0;
  mutable std::mutex m_;
  mutable std::vector<std::unique_ptr<cv::dnn::Net>> idle_;
};

// The model shipped with the nuclei plugin: nuclei-unet.onnx in the folder
// of the plugin's .so.
std::filesystem::path shipped_model_path();

}  // namespace flowd::nuclei
