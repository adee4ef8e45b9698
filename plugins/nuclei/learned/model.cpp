#include "model.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>
#include <opencv2/imgproc.hpp>

namespace flowd::nuclei {

namespace {

constexpr const char* format = "flowd.nuclei.unet/1";
constexpr int divisor = 8;  // three 2x2 poolings
constexpr double check_tolerance = 1e-3;

[[noreturn]] void refuse(const std::filesystem::path& file, const std::string& why) {
  throw ModelError("nuclear map model '" + file.string() + "': " + why);
}

// The manifest's check input (tools/train/nuclei/train.py, check_input).
cv::Mat check_input(int side) {
  cv::Mat rgb(side, side, CV_8UC3);
  for (int y = 0; y < side; ++y)
    for (int x = 0; x < side; ++x)
      rgb.at<cv::Vec3b>(y, x) = cv::Vec3b(static_cast<std::uint8_t>((x * 7 + y * 13) % 256),
                                          static_cast<std::uint8_t>((x * x + 3 * y) % 256),
                                          static_cast<std::uint8_t>(((x / 4) * 37 + (y / 4) * 11) % 256));
  return rgb;
}

}  // namespace

NuclearMapModel::~NuclearMapModel() = default;

std::shared_ptr<const NuclearMapModel> NuclearMapModel::load(const std::filesystem::path& onnx) {
  std::shared_ptr<NuclearMapModel> m(new NuclearMapModel);
  m->path_ = onnx;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(onnx, ec)) refuse(onnx, "no such file");
  const std::filesystem::path manifest = std::filesystem::path(onnx).replace_extension(".json");
  if (!std::filesystem::is_regular_file(manifest, ec))
    refuse(onnx, "its manifest '" + manifest.string() + "' is missing (tools/train/nuclei/train.py writes both)");
  nlohmann::json meta;
  try {
    std::ifstream in(manifest);
    meta = nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    refuse(onnx, "its manifest '" + manifest.string() + "' is not valid JSON: " + e.what());
  }
  if (!meta.is_object() || meta.value("format", "") != format)
    refuse(onnx, "its manifest is not a " + std::string(format) + " manifest (format " +
                     (meta.is_object() && meta.contains("format") ? meta["format"].dump() : std::string("missing")) + ")");
  if (meta.value("classes", nlohmann::json()) != nlohmann::json::array({"background", "interior", "boundary"}))
    refuse(onnx, "its manifest's classes are not [background, interior, boundary]");
  const auto mpp = meta.value("canonical_mpp", nlohmann::json());
  if (!mpp.is_number() || !(mpp.get<double>() > 0 && mpp.get<double>() <= 10))
    refuse(onnx, "its manifest's canonical_mpp is not a resolution in (0, 10] µm per pixel");
  m->canonical_mpp_ = mpp.get<double>();
  {
    std::ifstream in(onnx, std::ios::binary);
    m->onnx_.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (!in.good() && !in.eof()) refuse(onnx, "cannot be read");
  }
  try {
    m->give_back(m->take());  // the first network: an unreadable file fails here
  } catch (const cv::Exception& e) {
    refuse(onnx, "OpenCV cannot read it as an ONNX network (" + e.err + ")");
  }
  // The same outputs as the training framework's, on its check input.
  const auto& check = meta.value("check", nlohmann::json());
  if (!check.is_object() || !check.value("side", nlohmann::json()).is_number_integer() ||
      !check.value("points", nlohmann::json()).is_array() || !check.value("probabilities", nlohmann::json()).is_array() ||
      check["points"].size() != check["probabilities"].size() || check["points"].empty())
    refuse(onnx, "its manifest has no check (side, points, probabilities) to verify the network against");
  const int side = check["side"].get<int>();
  if (side < divisor || side % divisor || side > 1024) refuse(onnx, "its manifest's check side is not a multiple of 8");
  std::array<cv::Mat, 3> p;
  try {
    p = m->probabilities(check_input(side));
  } catch (const cv::Exception& e) {
    refuse(onnx, "the network does not run (" + e.err + ")");
  }
  double worst = 0;
  for (std::size_t i = 0; i < check["points"].size(); ++i) {
    const auto& pt = check["points"][i];
    const auto& want = check["probabilities"][i];
    const int y = pt.at(0).get<int>(), x = pt.at(1).get<int>();
    if (y < 0 || x < 0 || y >= side || x >= side || want.size() != 3)
      refuse(onnx, "its manifest's check point " + pt.dump() + " is malformed");
    for (int c = 0; c < 3; ++c)
      worst = std::max(worst, std::abs(static_cast<double>(p[static_cast<std::size_t>(c)].at<float>(y, x)) -
                                       want[static_cast<std::size_t>(c)].get<double>()));
  }
  m->check_error_ = worst;
  if (!(worst <= check_tolerance))
    refuse(onnx, "its outputs differ from those its manifest records by up to " + std::to_string(worst) +
                     " (tolerance " + std::to_string(check_tolerance) +
                     "): the network and the manifest do not belong together, or this OpenCV runs it differently");
  return m;
}

std::unique_ptr<cv::dnn::Net> NuclearMapModel::take() const {
  {
    std::lock_guard lk(m_);
    if (!idle_.empty()) {
      auto net = std::move(idle_.back());
      idle_.pop_back();
      return net;
    }
  }
  auto net = std::make_unique<cv::dnn::Net>(cv::dnn::readNetFromONNX(onnx_.data(), onnx_.size()));
  net->setPreferableBackend(cv::dnn::DNN_BACKEND_OPENCV);
  net->setPreferableTarget(cv::dnn::DNN_TARGET_CPU);
  return net;
}

void NuclearMapModel::give_back(std::unique_ptr<cv::dnn::Net> net) const {
  std::lock_guard lk(m_);
  idle_.push_back(std::move(net));
}

std::array<cv::Mat, 3> NuclearMapModel::probabilities(const cv::Mat& rgb) const {
  CV_Assert(rgb.type() == CV_8UC3);
  // Padded (mirrored) to a multiple of 8, the network's divisor.
  const int ph = (divisor - rgb.rows % divisor) % divisor, pw = (divisor - rgb.cols % divisor) % divisor;
  cv::Mat padded = rgb;
  if (ph || pw) cv::copyMakeBorder(rgb, padded, 0, ph, 0, pw, cv::BORDER_REFLECT_101);
  const cv::Mat blob = cv::dnn::blobFromImage(padded, 1.0 / 255.0, cv::Size(), cv::Scalar(), false, false, CV_32F);
  std::unique_ptr<cv::dnn::Net> net = take();
  cv::Mat logits;
  try {
    net->setInput(blob);
    logits = net->forward();
  } catch (...) {
    give_back(std::move(net));
    throw;
  }
  give_back(std::move(net));
  CV_Assert(logits.dims == 4 && logits.size[1] == 3 && logits.size[2] == padded.rows && logits.size[3] == padded.cols);
  // Softmax over the three classes, pixel by pixel.
  const int h = rgb.rows, w = rgb.cols, stride = padded.rows * padded.cols;
  std::array<cv::Mat, 3> out;
  for (auto& o : out) o.create(h, w, CV_32F);
  const float* l = logits.ptr<float>();
  for (int y = 0; y < h; ++y) {
    float* o0 = out[0].ptr<float>(y);
    float* o1 = out[1].ptr<float>(y);
    float* o2 = out[2].ptr<float>(y);
    const float* a = l + static_cast<std::ptrdiff_t>(y) * padded.cols;
    for (int x = 0; x < w; ++x) {
      const float v0 = a[x], v1 = a[x + stride], v2 = a[x + 2 * stride];
      const float top = std::max(v0, std::max(v1, v2));
      const float e0 = std::exp(v0 - top), e1 = std::exp(v1 - top), e2 = std::exp(v2 - top);
      const float sum = e0 + e1 + e2;
      o0[x] = e0 / sum;
      o1[x] = e1 / sum;
      o2[x] = e2 / sum;
    }
  }
  return out;
}

std::filesystem::path shipped_model_path() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&shipped_model_path), &info) == 0 || !info.dli_fname)
    return "nuclei-unet.onnx";
  return std::filesystem::path(info.dli_fname).parent_path() / "nuclei-unet.onnx";
}

}  // namespace flowd::nuclei
