// The synth plugin: a synthetic workload shaped like the nuclei pipeline of
// Region Templates (Teodoro et al. 2014), for scheduling experiments. The
// speedup hints follow that paper's grouping: low for RBC detection,
// morphological open, area threshold, fill holes and labelling; high for
// reconstruction, watershed and feature computation.
#include "synth.hpp"

namespace flowd::synth {
namespace {

// CPU milliseconds per 2048 x 2048 tile at scale 1, cost exponent on density,
// GPU speedup, output type and channels, joins the tile.
constexpr KernelShape deconvolution{"synth.color_deconvolution", "Colour deconvolution to haematoxylin (modelled).",
                                    900, 0.2, 9.0, DType::f32, 1, false};
constexpr KernelShape rbc{"synth.rbc_detection", "Red-blood-cell detection (modelled).", 700, 0.3, 1.1, DType::u8, 1, false};
constexpr KernelShape open{"synth.morph_open", "Morphological opening (modelled).", 1100, 0.2, 2.5, DType::u8, 1, false};
constexpr KernelShape recon{"synth.recon_to_nuclei", "Morphological reconstruction, ReconToNuclei (modelled).", 4200, 1.2,
                            14.0, DType::u8, 1, false};
constexpr KernelShape area{"synth.area_threshold", "Area threshold (modelled).", 600, 1.0, 1.5, DType::u8, 1, false};
constexpr KernelShape fill{"synth.fill_holes", "Fill holes (modelled).", 900, 1.0, 1.8, DType::u8, 1, false};
constexpr KernelShape prewatershed{"synth.pre_watershed", "Distance transform and markers (modelled).", 2600, 1.1, 6.0,
                                   DType::f32, 1, false};
constexpr KernelShape watershed{"synth.watershed", "Marker watershed (modelled).", 5200, 1.3, 18.0, DType::i32, 1, false};
constexpr KernelShape label{"synth.bwlabel", "Connected-component labelling (modelled).", 800, 1.0, 1.3, DType::i32, 1, false};
constexpr KernelShape features{"synth.features", "Per-nucleus features on the tile and its labels (modelled).", 6500, 1.0,
                               20.0, DType::f32, 1, true, 64 * 256};

// One operator class per shape, so each has its own name and hint.
template <const KernelShape& Shape> class Op final : public Map {
public:
  static OperatorSpec spec() { return Kernel::spec_for(Shape); }
  explicit Op(const Params& p) : kernel_(Shape, p) {}
  void cpu(MapContext& ctx) const override { kernel_.cpu(ctx); }

private:
  Kernel kernel_;
};

}  // namespace
}  // namespace flowd::synth

using namespace flowd::synth;
FLOWD_PLUGIN("synth", "0.1.0", "A synthetic nuclei-pipeline workload for scheduling experiments (simulated compute)",
             Tiles, Op<deconvolution>, Op<rbc>, Op<open>, Op<recon>, Op<area>, Op<fill>, Op<prewatershed>, Op<watershed>,
             Op<label>, Op<features>)
