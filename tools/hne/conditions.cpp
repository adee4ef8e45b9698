#include "hne/conditions.hpp"

#include <stdexcept>
#include <string>

namespace flowd::hne {

namespace {

// One preset: its listing and what it sets. Presets start from the caller's
// parameters, so size, seed and anything set before stay.
struct Preset {
  Condition condition;
  void (*apply)(Params&);
};

// Real tiles are mostly tissue: a little glass at most.
void tissue_tile(Params& p) { p.background = 0.02; }

const std::vector<Preset>& presets() {
  static const std::vector<Preset> all{
      {{"stroma", "pink eosinophilic stroma and cytoplasm between the nuclei (carcinoma-like)"},
       [](Params& p) {
         tissue_tile(p);
         p.tissue = Tissue::stroma;
       }},
      {{"neuropil", "purple-grey fibrillary neuropil between the nuclei, haematoxylin-tinted (glioma-like)"},
       [](Params& p) {
         tissue_tile(p);
         p.tissue = Tissue::neuropil;
         p.density = 0.8;
         p.rbc = 0.5;
       }},
      {{"mixed", "regions of neuropil and of stroma in one tile, about half each"},
       [](Params& p) {
         tissue_tile(p);
         p.tissue = Tissue::mixed;
         p.neuropil_share = 0.5;
       }},
      {{"pale-dark", "most tumour nuclei pale and vesicular beside dark hyperchromatic ones"},
       [](Params& p) {
         tissue_tile(p);
         p.pale = 0.7;
         p.density = 1.2;
       }},
      {{"crowded", "packed nuclei, many touching and a third of the clustered ones overlapping"},
       [](Params& p) {
         tissue_tile(p);
         p.density = 2.2;
         p.cluster = 0.6;
         p.overlap = 0.35;
       }},
      {{"stain-variation", "per-tile stain vectors, stain amounts, exposure, white balance and gamma widely varied"},
       [](Params& p) {
         tissue_tile(p);
         p.stain_jitter = 2.5;
         p.scanner = 1.0;
       }},
      {{"blur", "slightly out of focus: optical blur sigma 0.55 um"},
       [](Params& p) {
         tissue_tile(p);
         p.blur = 2.2;
       }},
      {{"jpeg", "JPEG-compressed at quality 75"},
       [](Params& p) {
         tissue_tile(p);
         p.jpeg = 75;
       }},
      {{"20x", "scanned at 20x (0.5 um per pixel): nuclei half as wide in pixels"},
       [](Params& p) {
         tissue_tile(p);
         p.mpp = 0.5;
       }},
      {{"hard", "all of the above at once at 40x, mostly neuropil"},
       [](Params& p) {
         tissue_tile(p);
         p.tissue = Tissue::mixed;
         p.neuropil_share = 0.75;
         p.pale = 0.6;
         p.density = 1.6;
         p.cluster = 0.5;
         p.overlap = 0.25;
         p.stain_jitter = 2.0;
         p.scanner = 1.0;
         p.blur = 1.8;
         p.jpeg = 80;
       }},
  };
  return all;
}

}  // namespace

const std::vector<Condition>& conditions() {
  static const std::vector<Condition> all = [] {
    std::vector<Condition> out;
    for (const Preset& p : presets())
      out.push_back(p.condition);
    return out;
  }();
  return all;
}

void apply_condition(std::string_view name, Params& p) {
  std::string valid;
  for (const Preset& preset : presets()) {
    if (preset.condition.name == name) {
      preset.apply(p);
      return;
    }
    valid += (valid.empty() ? "" : ", ") + std::string(preset.condition.name);
  }
  throw std::invalid_argument("flowd::hne: unknown condition '" + std::string(name) + "' (valid: " + valid + ")");
}

}  // namespace flowd::hne
