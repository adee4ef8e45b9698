#pragma once
// The registration of a series (docs/plugins/registration.md): the scan's
// operands, its combine, and the whole series done sequentially.
//
// pairwise(f_i, f_i+1) = A(f_i, f_i+1, I): consecutive frames differ by a
// fraction of a lattice period, so registering them from the identity cannot
// slip by a period.
// compose((i,j,phi_ij), (j,k,phi_jk)) = A(f_i, f_k, phi_jk o phi_ij): the
// product of the two motions is a guess within a small fraction of a period
// of phi_ik, and registering f_i to f_k directly from it removes the errors
// that a plain product of motions would accumulate along the series. Direct
// registration of distant frames from the identity would not do: their drift
// is several periods, and on an almost periodic lattice the NCC has an
// optimum at every period.
// refine(phi_0k) = A(f_0, f_k, phi_0k) on the fine levels only: every phi_0k
// is then the optimum reached from its scan result, so a parallel scan's
// bracketing does not change the answer beyond the optimiser's tolerance.
#include <cstdint>
#include <functional>
#include <vector>

#include "register.hpp"

namespace flowd::registration {

// An operand of the scan: phi_{from,to}. from == to is the identity element.
struct Step {
  std::int64_t from = 0;
  std::int64_t to = 0;
  Rigid phi{};

  bool is_identity() const noexcept { return from == to; }
};

struct SeriesOptions {
  PyramidOptions pyramid{};
  Options pairwise{};  // from the identity: every level
  Options compose{};   // from the product of the operands: every level as well
  bool refine = true;
  Options refinement = fine_levels();  // levels 1 and 0

  static Options fine_levels() {
    Options o;
    o.coarsest = 1;
    return o;
  }
};

// The frames behind operands, by index.
using FrameLookup = std::function<const Pyramid&(std::int64_t index)>;

Step pairwise(const FrameLookup& frames, std::int64_t i, std::int64_t k, const Options& options);
// Throws std::invalid_argument when the inner indices differ.
Step compose(const FrameLookup& frames, const Step& left, const Step& right, const Options& options);
Step refine(const FrameLookup& frames, const Step& step, const Options& options);

// phi_{0,i} for every frame (phi_{0,0} = identity): pairwise registrations,
// the sequential scan with compose, then refinement when asked.
std::vector<Rigid> register_series(const FrameLookup& frames, std::int64_t count, const SeriesOptions& options);

// The judge of issue 14: per frame the largest displacement between the
// estimate and the truth over the centre and the four corners.
struct SeriesError {
  double mean = 0.0;  // over frames 1..n-1 (frame 0 is the identity by definition)
  double max = 0.0;
  int off_by_period = 0;  // frames with an error of half a lattice period or more
  std::vector<double> per_frame{};
};
SeriesError evaluate(const std::vector<Rigid>& estimate, const std::vector<Rigid>& truth, int width, int height,
                     double period);

}  // namespace flowd::registration
