#pragma once
// Synthetic H&E-stained tissue tiles with exact nucleus instance labels, for
// tuning and testing nucleus segmentation (docs/tools.md describes the model).
//
// Images are rendered by Beer-Lambert absorption of haematoxylin, eosin and
// haemoglobin over a white light, so colour deconvolution behaves on them as
// on real slides. generate() is deterministic in (Params, index) for a given
// build: it uses std::mt19937_64 and OpenCV's cv::RNG, and libm functions
// whose last bit may differ between C libraries.
#include <cstdint>

#include <opencv2/core.hpp>

namespace flowd::hne {

struct Params {
  int width = 2048, height = 2048;
  std::uint64_t seed = 1;
  double mpp = 0.25;        // microns per pixel: 0.25 = 40x (nuclei ~15-40 px across), 0.5 = 20x (~8-20 px)
  double density = 1.0;     // nuclei density multiplier (1 = a typical tumour field)
  double stain = 1.0;       // haematoxylin/eosin strength multiplier
  double blur = 1.0;        // optical blur sigma in pixels at 40x (scaled by resolution)
  double noise = 1.0;       // sensor noise multiplier
  double rbc = 1.0;         // red-blood-cell amount multiplier
  double cluster = 0.3;     // fraction of nuclei placed in touching clusters
  double background = 0.1;  // fraction of the field that is glass (no tissue)
};

struct Sample {
  cv::Mat rgb;     // CV_8UC3, channel order R,G,B
  cv::Mat labels;  // CV_32S instance labels of nuclei, 0 = none, 1..N consecutive
};

// Throws std::invalid_argument naming the first parameter outside its range
// (the ranges are in docs/tools.md).
void validate(const Params& p);

// Image `index` of the data set described by `p`. Throws like validate().
Sample generate(const Params& p, int index = 0);

}  // namespace flowd::hne
