#pragma once
// Synthetic HAADF-STEM / TEM series of an almost periodic crystal lattice with
// the true drift of every frame, for testing and judging series registration
// (docs/tools.md, "flowd-tem-synth").
//
// The specimen: a square lattice of atomic columns (period `period` pixels,
// random orientation) with a two-atom basis - species A at the cell corners,
// species B (intensity `species_ratio` of A) at the cell centres - vacancies,
// a slow lattice distortion and small static displacements, on a slow
// background (thickness) that moves with the specimen. Frame k shows the
// specimen moved by the rigid motion truth[k] (frame 0: identity): a random
// walk of about `drift` pixels per frame with a persistent component, and a
// slow rotation. Each scan line is shifted along the fast-scan axis by a
// smooth random jitter (a non-rigid distortion a rigid model cannot follow;
// `jitter` pixels RMS, 0 = none), the detector adds a fixed gradient, the
// probe current varies by a few percent between frames, and the counts are
// Poisson with `dose` counts per pixel on average.
//
// Motions follow docs/plugins/registration.md: the specimen point at x_0 in
// frame 0 is at c + R(angle)(x_0 - c) + (tx, ty) in frame k, x = (column,
// row), c the image centre, angle in degrees.
//
// generate() is deterministic in (Params, index) for a given build (it uses
// std::mt19937_64 with its own transforms, and libm's exp and cos).
#include <cstdint>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

namespace flowd::tem {

struct Params {
  int frames = 64;
  int width = 512, height = 512;
  std::uint64_t seed = 1;
  double period = 8.0;             // lattice period, pixels
  double column_sigma = 1.2;       // Gaussian width of a species-A column, pixels
  double species_ratio = 0.5;      // species B intensity / species A
  double vacancies = 0.04;         // share of empty sites
  double distortion = 0.4;         // amplitude of the slow lattice distortion, pixels
  double drift = 0.5;              // RMS motion per frame, pixels
  double rotation = 0.001;         // slow rotation, degrees per frame
  double dose = 4.0;               // mean counts per pixel
  double background = 0.3;         // slow specimen background, relative to the columns' mean
  double fixed_background = 0.05;  // detector-fixed gradient, relative
  double jitter = 0.15;            // scan-line jitter, pixels RMS (0: rigid frames)
};

// A frame's true motion: frame 0's specimen point x_0 is at
// c + R(angle)(x_0 - c) + (tx, ty) in this frame.
struct Motion {
  double tx = 0.0, ty = 0.0;
  double angle = 0.0;  // degrees
};

// Throws std::invalid_argument naming the first parameter outside its range.
void validate(const Params& p);

// The true motion of every frame (truth[0] is the identity).
std::vector<Motion> truth(const Params& p);

// Frame `index` as counts, CV_16UC1. Throws like validate(), or
// std::out_of_range for an index outside [0, frames).
cv::Mat generate(const Params& p, int index);

// "frame_007": the file stem (item key) of frame `index`, zero-padded to the
// digits of frames - 1 (at least 3) so the names sort in frame order.
std::string frame_name(const Params& p, int index);

}  // namespace flowd::tem
