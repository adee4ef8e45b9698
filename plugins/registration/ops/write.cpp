#include "write.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <hdf5.h>
#include <opencv2/imgcodecs.hpp>

#include "deformations.hpp"
#include "h5.hpp"
#include "kernels.hpp"
#include "register.hpp"

namespace flowd::registration {

namespace {

std::string shortest(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

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
  s.params = {ParamSpec::string("dir").doc("output folder; created when missing"),
              ParamSpec::number("min_ncc", weak_match)
                  .range(-1.0, 1.0)
                  .doc("a frame whose NCC with frame 0 (at the registration's finest level, after its smoothing) is "
                       "below this is marked unreliable and left out of the average: a blank or pure-noise frame "
                       "gets about 0; docs/plugins/registration.md says how the floor was chosen"),
              ParamSpec::number("min_overlap", 0.25)
                  .range(0.0, 1.0)
                  .doc("the same for the share of frame 0 the moved frame still covers")};
  return s;
}

Write::Write(const Params& params)
    : dir_(params.get<std::string>("dir")),
      min_ncc_(params.get<double>("min_ncc")),
      min_overlap_(params.get<double>("min_overlap")) {
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
  const bool reliable = step.is_identity() || (step.ncc >= min_ncc_ && step.overlap >= min_overlap_);
  rows_.push_back({step, frame.meta, reliable});
  if (!reliable) return;  // its pixels would blur the average
  // average(x) = mean over reliably registered frames of f_i(phi_0i(x)),
  // where phi_0i(x) lies in f_i.
  const Image warped =
      warp(img.view(), level_params(step.phi, img.width(), img.height(), 0), img.width(), img.height(), std::nanf(""));
  for (int y = 0; y < img.height(); ++y) {
    const float* w = warped.row(y);
    float* s = sum_.row(y);
    float* c = count_.row(y);
    for (int x = 0; x < img.width(); ++x)
      if (!std::isnan(w[x])) s[x] += w[x], c[x] += 1.0f;
  }
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
  std::vector<std::string> weak;
  for (const Row& r : rows_) {
    table.push_back({r.frame.key, r.step.phi, MatchQuality{r.step.ncc, r.step.overlap, r.reliable}});
    if (!r.reliable) {
      char q[96];
      std::snprintf(q, sizeof q, " with NCC %.3f, overlap %.2f", r.step.ncc, r.step.overlap);
      weak.push_back(frame_label(r.frame) + q);
    }
  }
  const std::string floors = "min_ncc " + shortest(min_ncc_) + ", min_overlap " + shortest(min_overlap_);
  if (weak.size() + 1 >= rows_.size())
    throw Error("no frame but the first matched it (all " + std::to_string(weak.size()) + " others below " + floors +
                ", e.g. " + weak.front() + "): the series cannot be registered as it is (blank or noise frames, or "
                "frames of another scene?)");
  if (!weak.empty()) {
    std::string list;
    for (std::size_t i = 0; i < weak.size() && i < 8; ++i) list += (i ? ", " : "") + weak[i];
    if (weak.size() > 8) list += " and " + std::to_string(weak.size() - 8) + " more";
    ctx.warn(std::to_string(weak.size()) + " of " + std::to_string(rows_.size()) +
             " frames did not match frame 0 well enough to trust their motion: " + list +
             "; they are marked reliable=0 in deformations.csv and left out of average.tif (" + floors + ")");
  }
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
    std::vector<double> tx, ty, angle, ncc, overlap;
    std::vector<std::uint8_t> reliable;
    for (const Row& r : rows_) {
      names.push_back(r.frame.key.c_str());
      tx.push_back(r.step.phi.tx);
      ty.push_back(r.step.phi.ty);
      angle.push_back(r.step.phi.degrees());
      ncc.push_back(r.step.ncc);
      overlap.push_back(r.step.overlap);
      reliable.push_back(r.reliable ? 1 : 0);
    }
    h5::Id group = h5::create_group(file, "deformations", true);
    h5::Id str = h5::string_type();
    write_dataset(group, "frame", str, {n}, names.data());
    write_dataset(group, "tx", H5T_NATIVE_DOUBLE, {n}, tx.data());
    write_dataset(group, "ty", H5T_NATIVE_DOUBLE, {n}, ty.data());
    write_dataset(group, "angle", H5T_NATIVE_DOUBLE, {n}, angle.data());
    write_dataset(group, "ncc", H5T_NATIVE_DOUBLE, {n}, ncc.data());
    write_dataset(group, "overlap", H5T_NATIVE_DOUBLE, {n}, overlap.data());
    write_dataset(group, "reliable", H5T_NATIVE_UINT8, {n}, reliable.data());
    h5::set_attr(group, "convention",
                 "x_i = c + R(angle)(x_0 - c) + (tx, ty); x = (column, row) pixels, c = ((w-1)/2, (h-1)/2), "
                 "R(a) = [[cos a, -sin a], [sin a, cos a]], angle in degrees");
    h5::set_attr(group, "units", "tx, ty: pixels; angle: degrees; ncc: -1..1; overlap: share of frame 0's pixels");
    h5::set_attr(group, "quality",
                 "ncc: of each frame, moved by its motion, with frame 0 at the registration's finest level; "
                 "reliable = ncc >= " + shortest(min_ncc_) + " and overlap >= " + shortest(min_overlap_) +
                 " (unreliable frames are left out of the average)");
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
