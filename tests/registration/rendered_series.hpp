#pragma once
// A generated TEM series (tools/tem) with its true motions and each frame's
// pyramid, for the registration tests.
#include <cstddef>
#include <cstdint>
#include <vector>

#include <opencv2/core.hpp>

#include "register.hpp"
#include "series.hpp"
#include "tem/generate.hpp"

namespace flowd::registration::test {

struct RenderedSeries {
  std::vector<cv::Mat> images;  // CV_32F
  std::vector<Rigid> truth;
  std::vector<Pyramid> pyramids;
  FrameLookup lookup() const {
    return [this](std::int64_t i) -> const Pyramid& { return pyramids.at(static_cast<std::size_t>(i)); };
  }
};

inline RenderedSeries render(const tem::Params& p) {
  RenderedSeries f;
  for (const auto& m : tem::truth(p)) f.truth.push_back(Rigid::from_degrees(m.angle, m.tx, m.ty));
  for (int k = 0; k < p.frames; ++k) {
    cv::Mat m;
    tem::generate(p, k).convertTo(m, CV_32F);
    f.images.push_back(m);
    f.pyramids.emplace_back(ImageView{m.ptr<float>(), m.cols, m.rows, static_cast<std::ptrdiff_t>(m.step1())},
                            PyramidOptions{});
  }
  return f;
}

}  // namespace flowd::registration::test
