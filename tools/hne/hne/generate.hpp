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
#include <string>
#include <string_view>
#include <vector>

#include <opencv2/core.hpp>

namespace flowd::hne {

// The tissue between the nuclei.
enum class Tissue {
  stroma,    // pink: eosinophilic cytoplasm and collagen (carcinoma-like)
  neuropil,  // purple-grey fibrillary matrix, haematoxylin-tinted (glioma-like)
  mixed,     // regions of each, with smooth boundaries
};

// "stroma", "neuropil", "mixed"; tissue_from_name throws std::invalid_argument
// naming the valid ones.
std::string_view name_of(Tissue t);
Tissue tissue_from_name(std::string_view name);

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
  Tissue tissue = Tissue::stroma;
  double neuropil_share = 0.5;  // tissue = mixed: share of the tissue that is neuropil
  double pale = 0.35;           // share of tumour nuclei that are pale (vesicular)
  double overlap = 0.0;         // share of clustered nuclei that lie deeply over their neighbour
  double stain_jitter = 1.0;    // multiplier of the per-tile spread of stain vectors, amounts and glass tint
  double scanner = 0.0;         // per-tile scanner variation: gamma, brightness, white balance (0 = none)
  int jpeg = 0;                 // JPEG quality the RGB passes through, 1..100; 0 = no compression
};

enum class Kind { tumour, lymphocyte, stromal };

// What the truth knows about nucleus `label` (Sample::nuclei[label - 1]).
struct NucleusInfo {
  Kind kind = Kind::tumour;
  bool pale = false;  // vesicular: light interior, stained membrane, nucleoli
  int front_of = 0;   // label of the nucleus this one lies over (0: none, or it lost every pixel)
};

struct Sample {
  cv::Mat rgb;                      // CV_8UC3, channel order R,G,B
  cv::Mat labels;                   // CV_32S instance labels of nuclei, 0 = none, 1..N consecutive
  cv::Mat depth;                    // CV_8U: how many nucleus outlines cover the pixel (2 and more: overlap)
  std::vector<NucleusInfo> nuclei;  // N entries, label order
};

// Throws std::invalid_argument naming the first parameter outside its range
// (the ranges are in docs/tools.md).
void validate(const Params& p);

// Image `index` of the data set described by `p`. Throws like validate().
Sample generate(const Params& p, int index = 0);

}  // namespace flowd::hne
