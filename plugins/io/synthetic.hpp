#pragma once
// Generated test images, addressed by URI so a workflow can name them where
// it would name a file: synthetic:blobs?width=W&height=H&count=N&seed=S, or
// synthetic:hne?...&mpp=X&density=X&stain=X&blur=X&noise=X&tissue=T&... for
// the physically modelled H&E tiles of tools/hne (docs/tools.md), where
// condition=NAME sets one of its named presets and the other keys override,
// or synthetic:tem?frames=N&size=S&seed=S&... for a drifting TEM series of
// tools/tem (16-bit grey counts, frames keyed frame_000, frame_001, ...).
//
// blobs: the pixels depend only on (width, height, index, seed): it uses
// std::mt19937_64 (whose output the C++ standard fixes) with its own uniform
// and normal transforms, integer arithmetic for every per-pixel step that
// rounds, and IEEE-exact operations (+ - * / sqrt) elsewhere, so any
// conforming platform produces the same bytes.
#include <cstdint>
#include <string>
#include <string_view>

#include <opencv2/core.hpp>

#include "flowd/flowd.hpp"
#include "tem/generate.hpp"

namespace flowd::io {

struct SyntheticSpec {
  std::string generator = "blobs";  // "blobs", "hne" or "tem"
  int width = 2048;
  int height = 2048;
  std::int64_t count = 2;
  std::uint64_t seed = 1;
  // hne only (flowd::hne::Params; its defaults), a condition already applied.
  double mpp = 0.25;
  double density = 1.0;
  double stain = 1.0;
  double blur = 1.0;
  double noise = 1.0;
  double rbc = 1.0;
  double cluster = 0.3;
  double background = 0.1;
  std::string tissue = "stroma";
  double neuropil_share = 0.5;
  double pale = 0.35;
  double overlap = 0.0;
  double stain_jitter = 1.0;
  double scanner = 0.0;
  int jpeg = 0;
  // tem only: the generator's parameters other than the size, count and
  // seed above (which default to 512 x 512 and 64 frames for tem).
  tem::Params tem{};

  // The canonical URI: width, height, count and seed, for hne also mpp,
  // density, stain, blur and noise, and every other hne key whose value is
  // not the default (so the URIs of data sets from before those keys stay).
  std::string uri() const;
  // "<generator>-<index>"; for tem the generator's frame name, "frame_007".
  std::string key(std::int64_t index) const;
  // tem: the generator's parameters with this size, count and seed.
  tem::Params tem_params() const;
  // tem: {"truth": {"tx", "ty", "angle"}, "lattice_period"} of frame `index`
  // (the motion from frame 0, docs/plugins/registration.md); empty otherwise.
  Json truth_attrs(std::int64_t index) const;
};

inline constexpr std::string_view synthetic_scheme = "synthetic:";

inline bool is_synthetic_uri(std::string_view path) noexcept { return path.starts_with(synthetic_scheme); }

// Throws flowd::Error naming the URI, the offending part and the valid ones.
SyntheticSpec parse_synthetic_uri(std::string_view uri);

// A query value of a synthetic URI: an integer in [lo, hi] or a finite
// number. Throws flowd::Error naming the URI, the key and the range.
std::uint64_t parse_number(std::string_view uri, std::string_view key, std::string_view text, std::uint64_t lo,
                           std::uint64_t hi);
double parse_real(std::string_view uri, std::string_view key, std::string_view text);

// An H&E-like field as RGB u8 (R, G, B byte order, not OpenCV's BGR): a pink
// background with low-frequency variation, dark purple textured nuclei
// 8-30 px across (about one per 40x40 px, some touching), a 3x3 binomial
// blur and pixel noise.
cv::Mat synthetic_blobs(int width, int height, std::uint64_t index, std::uint64_t seed);

// Image `index` (0-based, < spec.count) of a parsed data set: RGB u8, for
// hne the image of flowd::hne::generate (its truth labels are dropped); for
// tem the frame of flowd::tem::generate, grey u16 counts.
cv::Mat synthetic_image(const SyntheticSpec& spec, std::int64_t index);

}  // namespace flowd::io
