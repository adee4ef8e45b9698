#pragma once
// A(R, T, phi'): registers template T to reference R from an initial guess,
// i.e. finds the rigid phi (rigid.hpp) with T(phi(x)) ~ R(x), by maximising
// the normalised cross-correlation of R and T o phi over their overlap,
// coarse to fine on a dyadic pyramid, with a Levenberg-Marquardt-damped
// Gauss-Newton step at each level (docs/plugins/registration.md, "The
// operator A").
#include <vector>

#include "image.hpp"
#include "kernels.hpp"
#include "rigid.hpp"

namespace flowd::registration {

enum class Model { rigid, translation };

struct Options {
  Model model = Model::rigid;
  // match-series' defaults: at most 500 iterations per level, stop when an
  // accepted step lowers the energy 1 - NCC by less than epsilon (relative).
  int max_iterations = 500;
  double epsilon = 1e-6;
  // Also stop when a step (taken or proposed) moves no point of the image by
  // more than this, in pixels of the level: at the finest level used, 1/1000
  // pixel is far below the noise; a coarser level only has to start the next
  // one well, which refines it anyway. Near the optimum the NCC of the
  // bilinear interpolant and its Gauss-Newton model (built from the
  // smoother central-difference gradient) disagree by about that much, so
  // without these tests a level would end in a run of rejected steps.
  double step_tolerance = 1e-3;
  double coarse_step_tolerance = 1e-2;
  // Levels used, 0 = finest (full resolution). coarsest < 0: the pyramid's
  // coarsest. A registration from a good guess (refinement) uses only the
  // fine levels, where the lattice is resolved.
  int coarsest = -1;
  int finest = 0;
};

// The pyramid of one frame: level 0 is the frame smoothed with a Gaussian of
// `smooth` pixels (against the shot noise), each next level pyramid_down of
// the previous, down to a side of min_side pixels; each with its gradient.
struct PyramidOptions {
  double smooth = 1.0;
  int min_side = 64;
  int max_levels = 8;
};

class Pyramid {
public:
  Pyramid() = default;
  Pyramid(const ImageView& frame, const PyramidOptions& options);

  int levels() const noexcept { return static_cast<int>(levels_.size()); }
  int width() const noexcept { return width_; }  // of the frame (level 0)
  int height() const noexcept { return height_; }
  const Image& level(int l) const { return levels_.at(static_cast<std::size_t>(l)); }
  const Image& gx(int l) const { return gx_.at(static_cast<std::size_t>(l)); }
  const Image& gy(int l) const { return gy_.at(static_cast<std::size_t>(l)); }

  // The number of levels for a w x h frame.
  static int level_count(int width, int height, const PyramidOptions& options) noexcept;

private:
  int width_ = 0, height_ = 0;
  std::vector<Image> levels_, gx_, gy_;
};

struct Result {
  Rigid phi;
  double ncc = 0.0;      // at the finest level used
  int iterations = 0;    // accepted and rejected steps, all levels
  double overlap = 0.0;  // share of the reference's pixels that the NCC covered at the finest level
};

// The pyramids must be of frames of the same size (throws
// std::invalid_argument otherwise).
Result register_pair(const Pyramid& reference, const Pyramid& tmpl, const Rigid& initial, const Options& options);

// What the optimiser needs of a pair of pyramids: the NCC sums at a level
// for a motion. The CPU pair is two Pyramids; the GPU twin keeps its
// pyramids on the device and reduces there, and both share optimise().
class LevelSums {
public:
  virtual ~LevelSums() = default;
  virtual int levels() const = 0;
  virtual int frame_width() const = 0;  // level 0
  virtual int frame_height() const = 0;
  virtual int level_pixels(int level) const = 0;  // of the reference
  virtual NccSums sums(int level, const WarpParams& p, bool with_jacobian) const = 0;
};

// A on any pair: coarse to fine over the levels options select.
Result optimise(const LevelSums& pair, const Rigid& initial, const Options& options);

// The warp at level `level` of a w x h frame's pyramid for a full-resolution
// motion phi: the centre and translation scaled by the level.
WarpParams level_params(const Rigid& phi, int width, int height, int level) noexcept;

}  // namespace flowd::registration
