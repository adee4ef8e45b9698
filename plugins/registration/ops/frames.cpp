#include "frames.hpp"

namespace flowd::registration {

std::string frame_label(const ItemMeta& meta) {
  std::string s = "frame '" + meta.key + "'";
  if (const auto it = meta.attrs.find("file"); it != meta.attrs.end() && it->is_string())
    s += " (file '" + it->get<std::string>() + "')";
  return s;
}

namespace {

template <class T>
void copy_rows(const Array& a, Image& out) {
  for (int y = 0; y < out.height(); ++y) {
    float* dst = out.row(y);
    for (int x = 0; x < out.width(); ++x)
      dst[x] = static_cast<float>(a.at<T>(y, x));
  }
}

}  // namespace

const Array& grey_frame(const Item& frame) {
  const auto* a = std::get_if<Array>(&frame.value);
  if (!a) throw Error(frame_label(frame.meta) + " is not an image");
  if (a->ndim() != 2)
    throw Error(frame_label(frame.meta) + " is " + a->describe() +
                "; registration needs grey frames (rows x columns): read them with mode \"grey\"");
  if (a->shape(0) < 1 || a->shape(1) < 1) throw Error(frame_label(frame.meta) + " is empty");
  if (a->dtype() != DType::u8 && a->dtype() != DType::u16 && a->dtype() != DType::f32)
    throw Error(frame_label(frame.meta) + " is " + a->describe() + "; registration reads u8, u16 and f32 frames");
  return *a;
}

Image frame_image(const Item& frame) {
  const Array& a = grey_frame(frame);
  Image out(static_cast<int>(a.shape(1)), static_cast<int>(a.shape(0)));
  switch (a.dtype()) {
    case DType::u8: copy_rows<std::uint8_t>(a, out); break;
    case DType::u16: copy_rows<std::uint16_t>(a, out); break;
    default: copy_rows<float>(a, out); break;  // f32: grey_frame() refused the rest
  }
  return out;
}

void check_same_size(const ItemMeta& a, const Image& ia, const ItemMeta& b, const Image& ib) {
  if (ia.width() == ib.width() && ia.height() == ib.height()) return;
  throw Error(frame_label(b) + " is " + std::to_string(ib.width()) + "x" + std::to_string(ib.height()) + " but " +
              frame_label(a) + " is " + std::to_string(ia.width()) + "x" + std::to_string(ia.height()) +
              ": the frames of a series must share one size");
}

std::vector<ParamSpec> registration_params() {
  const Options d;
  const PyramidOptions pd;
  return {
      ParamSpec::string("model", "rigid")
          .choices({"rigid", "translation"})
          .doc("rigid: rotation about the image centre and translation; translation: translation only"),
      ParamSpec::integer("max_iterations", d.max_iterations)
          .range(1, 100000)
          .doc("Gauss-Newton steps per pyramid level at most (match-series' default)"),
      ParamSpec::number("epsilon", d.epsilon)
          .range(0.0, 1.0)
          .doc("stop a level when a step lowers 1 - NCC by less than this share (match-series' default)"),
      ParamSpec::number("smooth", pd.smooth)
          .range(0.0, 10.0)
          .doc("Gaussian pre-smoothing of the frames, pixels (against shot noise; 0 = none)"),
  };
}

OperatorOptions OperatorOptions::from(const Params& params) {
  OperatorOptions o;
  o.options.model = params.get<std::string>("model") == "translation" ? Model::translation : Model::rigid;
  o.options.max_iterations = static_cast<int>(params.get<std::int64_t>("max_iterations"));
  o.options.epsilon = params.get<double>("epsilon");
  o.pyramid.smooth = params.get<double>("smooth");
  return o;
}

}  // namespace flowd::registration
