#include "prnu_gpu.hpp"

#include <stdexcept>
#include <string>

namespace flowd::prnu::gpu {

Image residual_nfi(const ImageView& rgb, GpuPlans& plans) {
  if (rgb.channels != 1 && rgb.channels != 3)
    throw std::invalid_argument("prnu grey: needs 1 or 3 channels, got " + std::to_string(rgb.channels));
  DeviceBuffer in(rgb.data.size());
  DeviceBuffer out(rgb.pixels());
  in.upload(rgb.data.data(), rgb.data.size());
  residual_nfi(in.data(), rgb.width, rgb.height, rgb.channels, out.data(), plans, nullptr);
  Image result(rgb.width, rgb.height, 1);
  out.download(result.data.data(), result.data.size());
  return result;
}

double ncc(std::span<const float> a, std::span<const float> b, GpuPlans& plans) {
  if (a.size() != b.size())
    throw std::invalid_argument("prnu ncc: " + std::to_string(a.size()) + " and " + std::to_string(b.size()) +
                                " samples");
  DeviceBuffer da(a.size()), db(b.size());
  da.upload(a.data(), a.size());
  db.upload(b.data(), b.size());
  return ncc(da.data(), db.data(), a.size(), plans, nullptr);
}

Image crosscorr_2d(const ImageView& a, const ImageView& b, GpuPlans& plans) {
  require_grey(a, "crosscorr_2d");
  require_grey(b, "crosscorr_2d");
  require_same_shape(a, b, "crosscorr_2d");
  DeviceBuffer da(a.pixels()), db(b.pixels()), dc(a.pixels());
  da.upload(a.data.data(), a.pixels());
  db.upload(b.data.data(), b.pixels());
  crosscorr_2d(da.data(), db.data(), a.width, a.height, dc.data(), plans, nullptr);
  Image out(a.width, a.height, 1);
  dc.download(out.data.data(), out.data.size());
  return out;
}

PceResult pce(const ImageView& cc, const PceOptions& options, GpuPlans& plans) {
  require_grey(cc, "pce");
  DeviceBuffer dc(cc.pixels());
  dc.upload(cc.data.data(), cc.pixels());
  const Pce p = pce(dc.data(), cc.width, cc.height, options.neighbourhood, options.search_radius, plans, nullptr);
  PceResult r;
  r.pce = p.pce;
  r.peak = p.peak;
  r.energy = p.energy;
  r.peak_x = p.peak_x;
  r.peak_y = p.peak_y;
  r.shift_x = p.shift_x;
  r.shift_y = p.shift_y;
  return r;
}

}  // namespace flowd::prnu::gpu
