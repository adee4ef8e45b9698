#include "write.hpp"

#include <algorithm>
#include <cmath>

#include <hdf5.h>
#include <opencv2/imgcodecs.hpp>

#include "deformations.hpp"
#include "h5.hpp"
#include "kernels.hpp"
#include "register.hpp"

namespace flowd::registration {

namespace {

std::vector<std::uint8_t> encode_tiff(const Image& img, const std::filesystem::path& target) {
  const cv::Mat m(img.height(), img.width(), CV_32FC1, const_cast<float*>(img.data()));
  std::vector<std::uint8_t> bytes;
  try {
    if (!cv::imencode(".tif", m, bytes)) throw Error("OpenCV could not encode it");
  } catch (const cv::Exception& e) {
    throw Error("writing '" + target.string() + "': " + e.what());
  }
  return bytes;
}

void write_dataset(hid_t file, const std::string& name, hid_t type, const std::vector<hsize_t>& dims,
                   const void* data) {
  h5::Id space = h5::check(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose,
                           "cannot create the dataspace of '" + name + "'");
  h5::Id ds = h5::check(H5Dcreate2(file, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Dclose,
                        "cannot create '" + name + "'");
  h5::check(H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), "cannot write '" + name + "'");
}

}  // namespace

OperatorSpec Write::spec() {
  OperatorSpec s;
  s.name = "registration.write";
  s.doc =
      "Writes a registered series: deformations.csv, average.tif (the frames averaged in frame 0's coordinates) "
      "and registration.h5; all appear together when the run succeeds";
  s.inputs = {{"frame", "array<u8|u16|f32,2>", "a frame of the series"},
              {"deformation", "json", "its motion from frame 0 (registration.pairwise/compose operands, same key)"}};
  s.params = {ParamSpec::string("dir").doc("output folder; created when missing")};
  return s;
}

Write::Write(const Params& params) : dir_(params.get<std::string>("dir")) {
  if (dir_.empty()) throw ParamError("dir", "dir is empty");
}

void Write::open(SinkContext& ctx) { ctx.output_folder(dir_); }

void Write::consume(SinkContext& ctx) {
  const Item& frame = ctx.input("frame");
  const KeyedStep step = step_of(ctx.input("deformation"));
  if (step.to != frame.meta.key)
    throw Error("the motion to '" + step.to + "' arrived with " + frame_label(frame.meta) +
                ": deformations must be keyed by their frame");
  const Image img = frame_image(frame);
  if (!first_) {
    first_ = frame.meta;
    sum_ = Image(img.width(), img.height());
    count_ = Image(img.width(), img.height());
  }
  if (img.width() != sum_.width() || img.height() != sum_.height()) {
    const Image probe(sum_.width(), sum_.height());
    check_same_size(*first_, probe, frame.meta, img);
  }
  // average(x) = mean over frames of f_i(phi_0i(x)), where phi_0i(x) lies in f_i.
  const Image warped =
      warp(img.view(), level_params(step.phi, img.width(), img.height(), 0), img.width(), img.height(), std::nanf(""));
  for (int y = 0; y < img.height(); ++y) {
    const float* w = warped.row(y);
    float* s = sum_.row(y);
    float* c = count_.row(y);
    for (int x = 0; x < img.width(); ++x)
      if (!std::isnan(w[x])) s[x] += w[x], c[x] += 1.0f;
  }
  rows_.push_back({step, frame.meta});
}

void Write::commit(SinkContext& ctx) {
  if (rows_.empty()) throw Error("no frames reached the stage: nothing to register");
  std::sort(rows_.begin(), rows_.end(), [](const Row& a, const Row& b) { return key_less(a.frame.key, b.frame.key); });
  if (rows_.size() == 1)
    throw Error("a single frame, " + frame_label(rows_[0].frame) + ": a registration needs at least two frames");
  const std::string reference = rows_[0].step.from;
  for (const Row& r : rows_)
    if (r.step.from != reference)
      throw Error("the motions start from different frames ('" + reference + "' and '" + r.step.from + "') at " +
                  frame_label(r.frame) + ": every motion must be from the series' first frame");
  if (std::none_of(rows_.begin(), rows_.end(), [&](const Row& r) { return r.frame.key == reference; }))
    throw Error("the reference frame '" + reference + "' of the motions is not among the frames");

  std::vector<Deformation> table;
  for (const Row& r : rows_)
    table.push_back({r.frame.key, r.step.phi});
  const std::string csv = format_deformations(table);
  ctx.write_output(dir_ / "deformations.csv", {reinterpret_cast<const std::uint8_t*>(csv.data()), csv.size()});

  Image average(sum_.width(), sum_.height());
  for (int y = 0; y < average.height(); ++y)
    for (int x = 0; x < average.width(); ++x)
      average.row(y)[x] = count_.row(y)[x] > 0.0f ? sum_.row(y)[x] / count_.row(y)[x] : 0.0f;
  ctx.write_output(dir_ / "average.tif", encode_tiff(average, dir_ / "average.tif"));

  const std::filesystem::path h5_target = dir_ / "registration.h5";
  const std::filesystem::path h5_path = ctx.stage_output(h5_target);
  h5::Quiet quiet;
  try {
    h5::Id file = h5::create_file(h5_path);
    const hsize_t n = rows_.size();
    std::vector<const char*> names;
    std::vector<double> tx, ty, angle;
    for (const Row& r : rows_) {
      names.push_back(r.frame.key.c_str());
      tx.push_back(r.step.phi.tx);
      ty.push_back(r.step.phi.ty);
      angle.push_back(r.step.phi.degrees());
    }
    h5::Id group = h5::create_group(file, "deformations", true);
    h5::Id str = h5::string_type();
    write_dataset(group, "frame", str, {n}, names.data());
    write_dataset(group, "tx", H5T_NATIVE_DOUBLE, {n}, tx.data());
    write_dataset(group, "ty", H5T_NATIVE_DOUBLE, {n}, ty.data());
    write_dataset(group, "angle", H5T_NATIVE_DOUBLE, {n}, angle.data());
    h5::set_attr(group, "convention",
                 "x_i = c + R(angle)(x_0 - c) + (tx, ty); x = (column, row) pixels, c = ((w-1)/2, (h-1)/2), "
                 "R(a) = [[cos a, -sin a], [sin a, cos a]], angle in degrees");
    const std::vector<hsize_t> dims = {static_cast<hsize_t>(average.height()), static_cast<hsize_t>(average.width())};
    write_dataset(file, "average", H5T_NATIVE_FLOAT, dims, average.data());
    write_dataset(file, "coverage", H5T_NATIVE_FLOAT, dims, count_.data());
    h5::Id root = h5::check(H5Gopen2(file, "/", H5P_DEFAULT), H5Gclose, "cannot open the root group");
    h5::set_attr(root, "reference_frame", reference);
    h5::set_attr(root, "provenance", ctx.provenance().dump());
    h5::check(H5Fflush(file, H5F_SCOPE_GLOBAL), "cannot flush");
  } catch (const Error& e) {
    throw Error("writing '" + h5_target.string() + "': " + e.what());
  }
}

}  // namespace flowd::registration
