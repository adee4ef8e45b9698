#pragma once
// Simulated camera photographs carrying each camera's PRNU (photo-response
// non-uniformity), with the truth, for testing and judging source-camera
// identification (docs/tools.md, "flowd-prnu-synth").
//
// A data set has `models` camera models; model 0's sensor is width x height,
// model m's 1 + m/8 times larger (multiples of 16). Each model has `cameras`
// cameras, named camA, camB, ... across all models (model-major). A camera
// is a sensor - its own multiplicative PRNU K (zero mean, RMS `sigma` drawn in
// [sigma_min, sigma_max]: white plus a spatially correlated part), a small
// pattern shared by every camera of its model (column gains, a periodic 8x8
// tile, row gains: a non-unique artefact), dark-signal non-uniformity with a
// few hot pixels, vignetting - behind a Bayer filter, and a model's image
// pipeline: white balance, demosaicing (bilinear or edge-aware), a colour
// matrix, gamma, sharpening, 8 bits, JPEG. K lives on the raw (mosaiced)
// grid, so after demosaicing each colour channel carries a different but
// correlated interpolation of it, as in real photographs; visible_prnu()
// gives that view.
//
// Rendering is deterministic in (Params, camera, Shot) on one build and
// machine: counter-based streams seed cv::RNG fields, and OpenCV's filters,
// demosaicing and libjpeg do the rest.
#include <cstdint>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

namespace flowd::prnu {

struct Params {
  int cameras = 4;        // cameras per model
  int models = 1;         // camera models; model m > 0 has a larger sensor
  int flatfields = 10;    // flat-field frames per camera
  int images = 10;        // aligned query images per camera
  int shifted = 0;        // extra cropped (shifted) query images per camera
  int width = 1024;       // model 0's sensor, landscape
  int height = 768;
  std::uint64_t seed = 1;
  std::vector<int> qualities{75, 85, 90, 95};  // JPEG qualities of the query images, drawn uniformly
  int flat_quality = 0;                        // JPEG quality of the flat-fields; 0 = PNG
  double portrait = 0.2;                       // probability that a query image is portrait (rotated 90 degrees)
  double sigma_min = 0.005, sigma_max = 0.02;  // range of the cameras' PRNU RMS
  double common = 0.002;                       // RMS of the model-wide pattern (0: none)
};

// Throws std::invalid_argument naming the first parameter outside its range.
void validate(const Params& p);

// The sensor size (landscape) of model `model` in [0, models).
cv::Size sensor_size(const Params& p, int model);

// "camA" ... "camZ", "camAA", ...: the name of camera `index` (model-major).
std::string camera_name(int index);

enum class Cfa { rggb, bggr, grbg, gbrg };  // top-left 2x2 of the Bayer filter, row-major

struct Camera {
  std::string name;
  int index = 0;  // over all cameras of the data set
  int model = 0;
  cv::Size size;        // sensor, landscape
  double sigma = 0.0;   // RMS of prnu
  cv::Mat prnu;         // CV_32FC1 on the raw grid: the camera's own K, mean 0, RMS sigma exactly
  cv::Mat common;       // CV_32FC1: the model's pattern, identical for every camera of the model
  cv::Mat dark;         // CV_32FC1: fixed dark signal, electrons (DSNU and hot pixels)
  // The sensor and lens.
  Cfa cfa = Cfa::rggb;
  double full_well = 0.0;   // electrons at full scale, base ISO
  double read_noise = 0.0;  // electrons RMS
  cv::Vec3d sensitivity;    // B, G, R response of the colour filters (G = 1)
  double vignetting = 0.0;  // relative falloff at the corners
  cv::Point2d optical_centre;
  // The model's image pipeline.
  bool edge_aware = false;  // demosaicing: OpenCV's edge-aware instead of bilinear
  cv::Matx33d colour;       // camera BGR to output BGR, rows summing to 1
  double gamma = 2.2;
  double sharpen = 0.0;     // unsharp-mask amount (sigma 1 px)
};

// Camera `index` in [0, models * cameras) of the data set; depends only on
// (seed, common, sigma range, width, height, index / cameras), not on how
// many cameras or images the set has.
Camera make_camera(const Params& p, int index);

// The camera's own K as it appears in the channels of a developed image of a
// neutral scene (mosaiced, demosaiced, colour matrix, sharpening): CV_32FC3,
// B, G, R. The truth to correlate an estimate from developed images with.
cv::Mat visible_prnu(const Camera& cam);

enum class Scene {
  flat,     // bright, nearly uniform: sky or wall, smooth gradient, no saturation
  natural,  // 1/f texture, gradients, shapes with edges, text-like strokes, saturated and dark areas
};

// A synthetic scene's irradiance: CV_32FC3, linear B, G, R, about 0 ... 1
// (natural scenes exceed 1 where they saturate).
cv::Mat make_scene(Scene kind, cv::Size size, std::uint64_t seed);

// A photograph (CV_8UC3 BGR, sRGB-ish) as a scene of `size`: scaled to cover
// it (zoomed 1-1.4x), cropped at a random place, maybe mirrored, linearised.
cv::Mat scene_from_photo(const cv::Mat& bgr, cv::Size size, std::uint64_t seed);

// One exposure of a camera and how its file is made.
struct Shot {
  Scene scene = Scene::natural;
  std::uint64_t seed = 0;   // scene, exposure and noise
  int iso = 1;              // gain over base ISO: 1, 2, 4, 8 (noise grows with it)
  int quality = 0;          // the camera's JPEG quality; 0 = lossless (PNG)
  int rotation = 0;         // 0, 90 or 270: the file is the sensor image rotated clockwise by it
  cv::Rect crop;            // non-empty: the file is this part of the camera's (unrotated) image...
  int crop_quality = 0;     // ...re-saved as JPEG of this quality (0: PNG) - a second compression
};

// The scene size a shot needs: the sensor's, turned for portrait shots.
cv::Size scene_size(const Camera& cam, const Shot& shot);

// The file's bytes (JPEG, or PNG for quality 0). `irradiance`: the scene, of
// scene_size(); empty = make_scene(shot.scene, scene_size(), shot.seed).
// Throws std::invalid_argument for a bad shot or irradiance.
std::vector<std::uint8_t> shoot(const Camera& cam, const Shot& shot, const cv::Mat& irradiance = {});

// The image the file holds, decoded: CV_8UC3 BGR.
cv::Mat render(const Camera& cam, const Shot& shot, const cv::Mat& irradiance = {});
inline cv::Mat render(const Camera& cam, Scene kind, std::uint64_t seed, int quality = 0) {
  Shot s;
  s.scene = kind;
  s.seed = seed;
  s.quality = quality;
  return render(cam, s);
}

// One file of the data set.
struct Item {
  std::string file;  // "flatfields/camA_03.png", "images/camB_11.jpg"
  int camera = 0;    // index
  int index = 0;     // k in the name
  bool flatfield = false;
  Shot shot;
};

// The files of camera `camera`: its flat-fields, then its aligned images,
// then its shifted ones. Deterministic in (p, camera).
std::vector<Item> plan(const Params& p, int camera);

// Which of `count` photographs an item uses as its scene (count > 0).
std::size_t photo_index(const Params& p, const Item& item, std::size_t count);

}  // namespace flowd::prnu
