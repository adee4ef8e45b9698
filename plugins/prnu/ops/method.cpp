#include "ops/method.hpp"

#include "filters.hpp"
#include "wavelet.hpp"

namespace flowd::prnu {

Method method_param(const Params& p) { return p.get<std::string>("method") == "nfi" ? Method::nfi : Method::wavelet; }

ParamSpec method_spec() {
  return ParamSpec::string("method", "wavelet")
      .choices({"wavelet", "nfi"})
      .doc("noise residual: wavelet (db4 Mihcak denoising, as prnu-python) or nfi (FastNoise, Rocket)");
}

ParamSpec crop_spec() {
  return ParamSpec::integer("crop", 512).at_least(0).doc("centre crop crop x crop before extraction (0: the whole image)");
}

Image residual(Method m, const ImageView& rgb, FftPlans& plans) {
  return m == Method::nfi ? residual_nfi(rgb, plans) : residual_wavelet(rgb, plans);
}

Image fingerprint_noise(Method m, const ImageView& rgb) {
  return m == Method::nfi ? fast_noise(grey_nfi(rgb)) : wavelet_noise_channels(rgb);
}

}  // namespace flowd::prnu
