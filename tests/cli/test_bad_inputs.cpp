// The bad-input matrix (issue 38, docs/reliability.md "Damaged inputs"): for
// every shipped workflow that reads files, each input format it reads is
// damaged four ways (truncated, corrupt, empty, of the wrong kind), one file
// at a time, and the workflow run with and without --keep-going. Checked
// each time: the exit code, a message naming the file, and what the output
// folder holds afterwards: nothing without --keep-going, the results of the
// other items with it (never a result made from the damaged file).
#include <zlib.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <random>

#include <hdf5.h>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <gtest/gtest.h>

#include "support/cli.hpp"
#include "support/helpers.hpp"
#include "support/tem_stack.hpp"
#include "tem/generate.hpp"

namespace fs = std::filesystem;
using flowd::test::contains;
using flowd::test::files_under;
using flowd::test::flowd_cmd;
using flowd::test::Result;
using flowd::test::scratch;
using flowd::test::slurp;
using flowd::test::write;

namespace {

enum class Damage { truncated, corrupt, empty, wrong_kind };
constexpr Damage damages[] = {Damage::truncated, Damage::corrupt, Damage::empty, Damage::wrong_kind};

const char* name_of(Damage d) {
  switch (d) {
    case Damage::truncated: return "truncated";
    case Damage::corrupt: return "corrupt";
    case Damage::empty: return "empty";
    case Damage::wrong_kind: return "wrong kind";
  }
  return "?";
}

std::string bytes_of(const fs::path& p) { return slurp(p); }

void put(const fs::path& p, const std::string& bytes) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Cut in half; a block zeroed past the middle (inside the compressed data
// of every format here); nothing; or another format's bytes under this
// name (a text file for images and HDF5, a PNG for a proteome).
void damage(const fs::path& file, Damage d) {
  std::string b = bytes_of(file);
  ASSERT_GT(b.size(), 256u) << file;
  switch (d) {
    case Damage::truncated: b.resize(b.size() / 2); break;
    case Damage::corrupt: {
      // A lost sector: 512 bytes of zeros past the middle. An HDF5 file's
      // raw data carry no checksum (nor do an uncompressed TIFF's or BMP's):
      // its superblock is damaged instead.
      const bool h5 = file.extension() == ".h5";
      const std::size_t from = h5 ? 8 : b.size() * 6 / 10, to = std::min(b.size() - 2, from + (h5 ? 64 : 512));
      for (std::size_t i = from; i < to; ++i) b[i] = h5 ? static_cast<char>(b[i] ^ 0x5a) : '\0';
      break;
    }
    case Damage::empty: b.clear(); break;
    case Damage::wrong_kind: {
      const std::string ext = file.extension().string();
      if (ext == ".faa" || ext == ".gz") {
        std::vector<std::uint8_t> png;
        cv::imencode(".png", cv::Mat(32, 32, CV_8UC3, cv::Scalar(10, 20, 30)), png);
        b.assign(png.begin(), png.end());
      } else {
        b = "name,value\nthis is a table, not " + ext + "\n";
      }
      break;
    }
  }
  put(file, b);
}

// An H&E-like RGB image: pink background, dark blobs.
cv::Mat tissue(int seed, int w, int h) {
  std::mt19937 rng(static_cast<unsigned>(seed));
  cv::Mat img(h, w, CV_8UC3, cv::Scalar(215, 170, 225));
  std::uniform_int_distribution<int> x(0, w - 1), y(0, h - 1), r(5, 9);
  for (int i = 0; i < 30; ++i) cv::circle(img, {x(rng), y(rng)}, r(rng), cv::Scalar(160, 60, 90), cv::FILLED);
  cv::Mat noise(h, w, CV_8UC3);
  cv::randn(noise, 0, 8);
  img += noise;
  cv::GaussianBlur(img, img, {0, 0}, 1.0);
  return img;
}

// A photo-like image with a texture and noise, for PRNU.
cv::Mat photo(int seed, int w, int h) {
  cv::Mat img(h, w, CV_8UC3);
  cv::theRNG().state = static_cast<std::uint64_t>(seed) * 7919 + 1;
  cv::randu(img, 40, 220);
  cv::GaussianBlur(img, img, {0, 0}, 2.0);
  return img;
}

void save(const fs::path& file, const cv::Mat& img) {
  const std::string ext = file.extension().string();
  std::vector<int> params;
  if (ext == ".jpg") params = {cv::IMWRITE_JPEG_QUALITY, 92};
  if (ext == ".tif") params = {cv::IMWRITE_TIFF_COMPRESSION, 5};  // LZW: damage in it is detectable
  ASSERT_TRUE(cv::imwrite(file.string(), img, params)) << file;
}

std::string protein_text(std::mt19937& rng, int proteins) {
  static const char aa[] = "ACDEFGHIKLMNPQRSTVWY";
  std::uniform_int_distribution<int> pick(0, 19), len(80, 300);
  std::string t;
  for (int p = 0; p < proteins; ++p) {
    t += ">p" + std::to_string(p) + "\n";
    const int n = len(rng);
    for (int i = 0; i < n; ++i) {
      t += aa[pick(rng)];
      if (i % 60 == 59) t += '\n';
    }
    t += '\n';
  }
  return t;
}

void gzip_to(const fs::path& file, const std::string& text) {
  gzFile f = gzopen(file.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  gzwrite(f, text.data(), static_cast<unsigned>(text.size()));
  gzclose(f);
}

std::string workflow(const char* name) { return (fs::path(FLOWD_SOURCE_DIR) / name).string(); }

// Every file below `out`, and the text of the text files among them.
std::string everything_under(const fs::path& out) {
  std::string all;
  for (const auto& f : files_under(out)) {
    all += f + "\n";
    const std::string ext = fs::path(f).extension().string();
    if (ext == ".csv" || ext == ".phylip" || ext == ".nwk") all += slurp(out / f);
  }
  return all;
}

struct Matrix {
  std::string wf;                 // workflow file
  std::vector<std::string> sets;  // --set arguments (input, output=out, ...)
  // Makes a fresh input set in `dir`; returns the file to damage, whose
  // stem names the item that must not appear in the outputs.
  std::function<fs::path(const fs::path& dir)> inputs;
  // With --keep-going: what the output folder must hold.
  std::function<void(const fs::path& out, const std::string& bad)> kept;
  int keep_going_exit = 4;  // 3 where the damaged file is the only input
};

// One damage of one format, without and with --keep-going.
void run_case(const Matrix& m, Damage d, const std::string& label) {
  for (const bool keep_going : {false, true}) {
    const auto dir = scratch();
    const fs::path bad = m.inputs(dir);
    damage(bad, d);
    std::vector<std::string> args{m.wf, "--no-progress", "--no-perf-model", "--gpu", "none"};
    for (const auto& s : m.sets) args.insert(args.end(), {"--set", s});
    if (keep_going) args.push_back("-k");
    const Result r = flowd_cmd(dir, args);
    const std::string what = label + ", " + name_of(d) + (keep_going ? ", --keep-going" : "");
    const std::string stem = bad.filename().string().substr(0, bad.filename().string().find('.'));
    EXPECT_TRUE(contains(r.err, bad.filename().string())) << what << ": the message does not name the file\n" << r.err;
    if (!keep_going || m.keep_going_exit == 3) {
      EXPECT_EQ(r.code, 3) << what << "\n" << r.err;
      EXPECT_TRUE(files_under(dir / "out").empty()) << what << ": a failed run wrote " << files_under(dir / "out").size()
                                                    << " files";
      continue;
    }
    EXPECT_EQ(r.code, 4) << what << "\n" << r.err;
    EXPECT_FALSE(contains(everything_under(dir / "out"), stem))
        << what << ": the damaged item '" << stem << "' is in the outputs:\n" << everything_under(dir / "out");
    m.kept(dir / "out", stem);
  }
}

void run_matrix(const Matrix& m, const std::string& label,
                std::vector<Damage> which = std::vector<Damage>(std::begin(damages), std::end(damages))) {
  for (const Damage d : which) {
    SCOPED_TRACE(label + ", " + name_of(d));
    run_case(m, d, label);
  }
}

// Images into DIR/in; the third of four is the one damaged.
std::function<fs::path(const fs::path&)> image_folder(const std::string& ext, bool rgb, int w = 256, int h = 224) {
  return [=](const fs::path& dir) {
    fs::create_directories(dir / "in");
    const char* names[] = {"alpha", "bravo", "charlie", "delta"};
    for (int i = 0; i < 4; ++i) {
      cv::Mat img = tissue(i + 1, w, h);
      if (!rgb) cv::cvtColor(img, img, cv::COLOR_BGR2GRAY);
      save(dir / "in" / (std::string(names[i]) + ext), img);
    }
    return dir / "in" / ("charlie" + ext);
  };
}

}  // namespace

TEST(BadInputs, NucleiPngJpegTiff) {
  for (const std::string ext : {".png", ".jpg", ".tif"}) {
    Matrix m{workflow("workflows/nuclei.json"), {"input=in", "output=out"}, image_folder(ext, true),
             [](const fs::path& out, const std::string&) {
               for (const char* n : {"alpha", "bravo", "delta"}) EXPECT_TRUE(fs::exists(out / "labels" / (std::string(n) + ".png"))) << n;
               EXPECT_TRUE(fs::exists(out / "features.h5"));
             }};
    run_matrix(m, "nuclei " + ext);
  }
}

TEST(BadInputs, DefaultPngJpeg) {
  for (const std::string ext : {".png", ".jpg"}) {
    Matrix m{workflow("workflows/default.json"), {"input=in", "output=out"}, image_folder(ext, true),
             [](const fs::path& out, const std::string&) {
               EXPECT_TRUE(fs::exists(out / "regions.h5"));
               EXPECT_FALSE(files_under(out / "masks").empty());
             }};
    run_matrix(m, "default " + ext);
  }
}

TEST(BadInputs, VirtualMicroscopePngJpegTiff) {
  for (const std::string ext : {".png", ".jpg", ".tif"}) {
    Matrix m{workflow("workflows/virtual-microscope.json"), {"input=in", "output=out", "factor=2"},
             image_folder(ext, true), [](const fs::path& out, const std::string&) {
               for (const char* n : {"alpha", "bravo", "delta"}) EXPECT_TRUE(fs::exists(out / (std::string(n) + ".png"))) << n;
             }};
    run_matrix(m, "virtual-microscope " + ext);
  }
}

namespace {

// A drifting TEM series of six frames (tools/tem); frame 3 is damaged.
std::function<fs::path(const fs::path&)> tem_frames(const std::string& ext) {
  return [=](const fs::path& dir) {
    fs::create_directories(dir / "in");
    flowd::tem::Params p;
    p.frames = 6;
    p.width = p.height = 128;
    for (int k = 0; k < p.frames; ++k) save(dir / "in" / (flowd::tem::frame_name(p, k) + ext), flowd::tem::generate(p, k));
    return dir / "in" / (flowd::tem::frame_name(p, 3) + ext);
  };
}

}  // namespace

TEST(BadInputs, RegistrationTiffPng) {
  for (const std::string ext : {".tif", ".png"}) {
    Matrix m{workflow("workflows/registration.json"), {"input=in", "output=out"}, tem_frames(ext),
             [](const fs::path& out, const std::string&) {
               const std::string csv = slurp(out / "deformations.csv");
               for (const char* f : {"frame_000", "frame_002", "frame_004", "frame_005"}) EXPECT_TRUE(contains(csv, f)) << csv;
               EXPECT_TRUE(fs::exists(out / "average.tif"));
             }};
    run_matrix(m, "registration " + ext);
  }
}

TEST(BadInputs, RegistrationHdf5) {
  Matrix m{workflow("docs/examples/registration-hdf5.json"),
           {"input=series.h5", "dataset=/stack", "output=out"},
           [](const fs::path& dir) {
             flowd::tem::Params p;
             p.frames = 5;
             p.width = p.height = 96;
             flowd::test::write_series_h5(p, dir / "series.h5");
             return dir / "series.h5";
           },
           {},
           3};  // the only input: with --keep-going there is nothing left to register
  run_matrix(m, "registration-hdf5 .h5");
}

namespace {

// Four proteomes; P3 is damaged.
std::function<fs::path(const fs::path&)> proteomes(bool gz) {
  return [=](const fs::path& dir) {
    fs::create_directories(dir / "in");
    std::mt19937 rng(11);
    for (int i = 1; i <= 4; ++i) {
      const std::string text = protein_text(rng, 60);
      const fs::path f = dir / "in" / ("P" + std::to_string(i) + (gz ? ".faa.gz" : ".faa"));
      if (gz) gzip_to(f, text);
      else write(f, text);
    }
    return dir / "in" / (gz ? "P3.faa.gz" : "P3.faa");
  };
}

void three_proteomes(const fs::path& out, const std::string&) {
  const std::string phylip = slurp(out / "distances_k5.phylip");
  EXPECT_EQ(phylip.substr(0, phylip.find('\n')), "3") << phylip;
  for (const char* n : {"P1", "P2", "P4"}) EXPECT_TRUE(contains(phylip, n)) << phylip;
  EXPECT_TRUE(fs::exists(out / "cvtree.h5"));
}

}  // namespace

TEST(BadInputs, CvtreeGzip) {
  run_matrix({workflow("workflows/cvtree.json"), {"input=in", "output=out"}, proteomes(true), three_proteomes},
             "cvtree .faa.gz");
}

// Plain FASTA has no end marker: a file cut at a line break is a valid,
// shorter proteome (a documented limit), and one cut inside a line is read
// with a warning naming it. The other damages are errors.
TEST(BadInputs, CvtreePlainFasta) {
  run_matrix({workflow("workflows/cvtree.json"), {"input=in", "output=out"}, proteomes(false), three_proteomes},
             "cvtree .faa", {Damage::corrupt, Damage::empty, Damage::wrong_kind});
  const auto dir = scratch();
  const fs::path bad = proteomes(false)(dir);
  std::string text = slurp(bad);
  text.resize(text.size() / 2);
  if (text.back() == '\n') text.pop_back();
  write(bad, text);
  const Result r = flowd_cmd(dir, {workflow("workflows/cvtree.json"), "--no-progress", "--no-perf-model", "--set",
                                   "input=in", "--set", "output=out"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "P3.faa': the last line has no line break")) << r.err;
}

namespace {

// Photos of two cameras (names carry the camera up to the last '_':
// camA_1, ..., camB_3, or camA_f1, ... with prefix "f"); camB's second is
// the one damaged.
std::function<fs::path(const fs::path&)> photos(const std::string& ext, const std::string& sub = "in",
                                                const std::string& prefix = "") {
  return [=](const fs::path& dir) {
    fs::create_directories(dir / sub);
    const char* names[] = {"camA_1", "camA_2", "camB_1", "camB_2", "camB_3"};
    auto name = [&](const char* n) {
      const std::string s(n);
      return s.substr(0, 5) + prefix + s.substr(5);
    };
    for (int i = 0; i < 5; ++i) save(dir / sub / (name(names[i]) + ext), photo(i + 3 + (prefix.empty() ? 0 : 50), 192, 160));
    return dir / sub / (name("camB_2") + ext);
  };
}

}  // namespace

TEST(BadInputs, PrnuAllPairsJpegPng) {
  for (const std::string ext : {".jpg", ".png"}) {
    Matrix m{workflow("workflows/prnu-allpairs.json"), {"images=in", "output=out", "crop=128"}, photos(ext),
             [](const fs::path& out, const std::string&) {
               const std::string csv = slurp(out / "scores.csv");
               // The four good photos, each pair once.
               EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 1 + 6) << csv;
               for (const char* f : {"scores.h5", "heatmap.png"}) EXPECT_TRUE(fs::exists(out / f)) << f;
             }};
    run_matrix(m, "prnu-allpairs " + ext);
  }
}

TEST(BadInputs, PrnuIdentifyJpeg) {
  auto both = [](const fs::path& dir) {
    photos(".jpg", "flat", "f")(dir);
    return photos(".jpg", "in")(dir);
  };
  Matrix images{workflow("workflows/prnu-identify.json"), {"flatfields=flat", "images=in", "output=out", "crop=128"},
                both, [](const fs::path& out, const std::string&) {
                  const std::string csv = slurp(out / "scores.csv");
                  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 1 + 2 * 4) << csv;  // 2 cameras x 4 photos
                }};
  run_matrix(images, "prnu-identify, a photo");
  // A damaged flat-field: its camera's fingerprint is the failed item.
  Matrix flat = images;
  flat.inputs = [](const fs::path& dir) {
    photos(".jpg", "in")(dir);
    return photos(".jpg", "flat", "f")(dir);
  };
  flat.kept = [](const fs::path& out, const std::string&) {
    const std::string csv = slurp(out / "scores.csv");
    EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 1 + 5) << csv;  // camA's fingerprint x 5 photos
  };
  run_case(flat, Damage::truncated, "prnu-identify, a flat-field");
}

// Issue 38 item 5: one rule for every workflow's output folder.
TEST(BadInputs, EveryShippedWorkflowRefusesAnOutputFolderWithAStrangersFile) {
  struct Case {
    const char* wf;
    std::vector<std::string> sets;
    std::function<void(const fs::path&)> inputs;
  };
  const std::vector<Case> cases = {
      {"workflows/nuclei.json", {"input=in"}, [](const fs::path& d) { image_folder(".png", true)(d); }},
      {"workflows/default.json", {"input=in"}, [](const fs::path& d) { image_folder(".png", true)(d); }},
      {"workflows/virtual-microscope.json", {"input=in"}, [](const fs::path& d) { image_folder(".png", true)(d); }},
      {"workflows/registration.json", {"input=in"}, [](const fs::path& d) { tem_frames(".tif")(d); }},
      {"workflows/cvtree.json", {"input=in"}, [](const fs::path& d) { proteomes(true)(d); }},
      {"workflows/prnu-allpairs.json", {"images=in", "crop=128"}, [](const fs::path& d) { photos(".jpg")(d); }},
      {"workflows/prnu-identify.json",
       {"flatfields=flat", "images=in", "crop=128"},
       [](const fs::path& d) {
         photos(".jpg", "flat", "f")(d);
         photos(".jpg", "in")(d);
       }},
      {"workflows/synthetic-hetero.json", {"tiles=2", "size=256"}, [](const fs::path&) {}},
  };
  std::size_t shipped = 0;
  for (const auto& e : fs::directory_iterator(fs::path(FLOWD_SOURCE_DIR) / "workflows"))
    shipped += e.path().extension() == ".json";
  EXPECT_EQ(cases.size(), shipped) << "a shipped workflow is missing from this test";
  for (const auto& c : cases) {
    SCOPED_TRACE(c.wf);
    const auto dir = scratch();
    c.inputs(dir);
    write(dir / "out" / "holiday.png", "not flowd's");
    std::vector<std::string> args{workflow(c.wf), "--no-progress", "--no-perf-model", "--set", "output=out"};
    for (const auto& s : c.sets) args.insert(args.end(), {"--set", s});
    const Result r = flowd_cmd(dir, args);
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_TRUE(contains(r.err, "1 file(s) that no earlier flowd run wrote there ('out/holiday.png')")) << r.err;
    EXPECT_EQ(files_under(dir / "out"), std::vector<std::string>{"holiday.png"});
  }
}

namespace {

// A journalled run over four images, then the images cut to their headers:
// a resumed run that read them again would fail.
void resume_without_reading(const std::string& source) {
  const auto dir = scratch();
  image_folder(".png", true, 128, 128)(dir);
  write(dir / "wf.json", R"({"version": 1, "stages": {
      "src": {"op": ")" + source + R"(", "params": {"path": "in")" +
                             (source == "io.read_tiles" ? R"(, "tile": 64)" : "") + R"(}},
      "out": {"op": "io.write_image", "inputs": {"image": "src.)" +
                             (source == "io.read_tiles" ? "tile" : "image") + R"("}, "params": {"dir": "out"}}}})");
  const std::vector<std::string> args{"wf.json", "--no-progress", "--no-perf-model", "--journal", "journal"};
  const Result first = flowd_cmd(dir, args);
  ASSERT_EQ(first.code, 0) << first.err;
  const auto written = files_under(dir / "out");
  std::map<std::string, std::string> before;
  for (const auto& f : written)
    if (f != ".flowd-manifest.json") before[f] = slurp(dir / "out" / f);  // it names the command
  for (const auto& e : fs::directory_iterator(dir / "in")) {
    std::string b = slurp(e.path());
    b.resize(64);  // the header (and so the size) stays; the pixels are gone
    put(e.path(), b);
  }
  std::vector<std::string> resume = args;
  resume.push_back("--resume");
  const Result again = flowd_cmd(dir, resume);
  ASSERT_EQ(again.code, 0) << "the resumed run read the finished images again:\n" << again.err;
  EXPECT_TRUE(contains(again.err, "source items finished by earlier runs were skipped")) << again.err;
  EXPECT_EQ(files_under(dir / "out"), written);
  for (const auto& [f, bytes] : before) EXPECT_EQ(slurp(dir / "out" / f), bytes) << f;
}

}  // namespace

// Issue 38 item 6: a resumed run re-read (and decoded) every image, so it
// saved almost no time.
TEST(ResumedRun, ReadImagesDoesNotReadTheImagesAnEarlierRunFinished) { resume_without_reading("io.read_images"); }
TEST(ResumedRun, ReadTilesDoesNotReadAnImageWhoseTilesAreAllFinished) { resume_without_reading("io.read_tiles"); }
