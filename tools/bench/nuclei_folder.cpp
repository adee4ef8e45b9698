#include "nuclei_folder.hpp"

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <sys/resource.h>
#include <sys/wait.h>

#include "bench_common.hpp"
#include "features/features.hpp"
#include "h5.hpp"
#include "hne/generate.hpp"
#include "label_mosaic.hpp"
#include "runtime/run.hpp"
#include "segment/pipeline.hpp"
#include "util/malloc_tuning.hpp"
#include "workflow/validate.hpp"

namespace flowd::bench {

namespace {

namespace fs = std::filesystem;

// Tiles as users have them: 512² RGB PNGs, half at 40x and half at 20x, each
// its own field (seed).
std::vector<fs::path> write_tiles(const fs::path& dir, int count, int size) {
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::vector<fs::path> files;
  for (int i = 0; i < count; ++i) {
    hne::Params p;
    p.width = p.height = size;
    p.seed = 1000 + static_cast<std::uint64_t>(i);
    p.mpp = i % 2 ? 0.5 : 0.25;
    const hne::Sample s = hne::generate(p);
    cv::Mat bgr;
    cv::cvtColor(s.rgb, bgr, cv::COLOR_RGB2BGR);
    char name[32];
    std::snprintf(name, sizeof name, "tile-%04d.png", i);
    files.push_back(dir / name);
    if (!cv::imwrite(files.back().string(), bgr)) throw Error("cannot write " + files.back().string());
  }
  return files;
}

void write_file(const fs::path& path, const std::vector<std::uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!f.flush()) throw Error("cannot write " + path.string());
}

std::vector<std::uint8_t> png(const cv::Mat& m) {
  std::vector<std::uint8_t> bytes;
  if (!cv::imencode(".png", m, bytes)) throw Error("cannot encode a PNG");
  return bytes;
}

// The feature rows of every tile, column by column, as io.write_hdf5 stores
// them: the item key, the label, the centroid and box, then the features.
struct Rows {
  std::vector<std::string> keys;
  std::vector<std::int32_t> label;
  std::vector<std::vector<double>> real;       // centroid row, col, then the features
  std::vector<std::vector<std::int64_t>> box;  // row, col, height, width

  Rows() : real(2 + nuclei::features::kFeatureCount), box(4) {}

  void add(const std::string& key, const nuclei::features::Result& r) {
    for (std::size_t i = 0; i < r.nuclei.size(); ++i) {
      const auto& n = r.nuclei[i];
      keys.push_back(key);
      label.push_back(n.label);
      real[0].push_back(n.centroid_row), real[1].push_back(n.centroid_col);
      box[0].push_back(n.bbox_row), box[1].push_back(n.bbox_col);
      box[2].push_back(n.bbox_height), box[3].push_back(n.bbox_width);
      for (int f = 0; f < nuclei::features::kFeatureCount; ++f)
        real[2 + static_cast<std::size_t>(f)].push_back(r.at(i, f));
    }
  }
  void append(Rows&& o) {
    keys.insert(keys.end(), o.keys.begin(), o.keys.end());
    label.insert(label.end(), o.label.begin(), o.label.end());
    for (std::size_t c = 0; c < real.size(); ++c)
      real[c].insert(real[c].end(), o.real[c].begin(), o.real[c].end());
    for (std::size_t c = 0; c < box.size(); ++c)
      box[c].insert(box[c].end(), o.box[c].begin(), o.box[c].end());
  }

  // One dataset per column with the sink's settings: gzip 4 and shuffle in
  // 256 KiB chunks from 4096 rows on.
  void write(const fs::path& file) const {
    h5::Quiet quiet;
    h5::Id f = h5::create_file(file);
    h5::Id g = h5::create_group(f, "/nuclei", true);
    const auto n = static_cast<hsize_t>(keys.size());
    int column = 0;
    const auto put = [&](hid_t type, std::size_t element, const void* data) {
      h5::Id space = h5::check(H5Screate_simple(1, &n, nullptr), H5Sclose, "dataspace");
      h5::Id dcpl = h5::check(H5Pcreate(H5P_DATASET_CREATE), H5Pclose, "dcpl");
      if (n >= 4096) {
        const hsize_t chunk = std::min<hsize_t>(n, 256 * 1024 / element);
        h5::check(H5Pset_chunk(dcpl, 1, &chunk), "chunk");
        h5::check(H5Pset_shuffle(dcpl), "shuffle");
        h5::check(H5Pset_deflate(dcpl, 4), "deflate");
      }
      const std::string name = "c" + std::to_string(column++);
      h5::Id ds = h5::check(H5Dcreate2(g, name.c_str(), type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT), H5Dclose, name);
      if (n > 0) h5::write_rows(ds, type, 0, n, data);
      ds.close("cannot write " + name);
    };
    std::vector<const char*> k;
    for (const auto& s : keys)
      k.push_back(s.c_str());
    const h5::Id strings = h5::string_type();
    put(strings, 16, k.data());
    put(H5T_NATIVE_INT32, 4, label.data());
    for (const auto& c : box)
      put(H5T_NATIVE_INT64, 8, c.data());
    for (const auto& c : real)
      put(H5T_NATIVE_DOUBLE, 8, c.data());
    g.close("group");
    f.close("cannot close " + file.string());
  }
};

// What the job does for one tile, by direct calls: the operators' functions
// and the files the sinks write (plain writes: no temporaries, no fsync).
void direct_tile(const fs::path& file, const fs::path& out, Rows& rows) {
  cv::Mat bgr = cv::imread(file.string(), cv::IMREAD_COLOR | cv::IMREAD_ANYDEPTH | cv::IMREAD_IGNORE_ORIENTATION), rgb;
  if (bgr.empty()) throw Error("cannot read " + file.string());
  cv::cvtColor(bgr, rgb, cv::COLOR_BGR2RGB);
  nuclei::SegmentParams p;
  p.mpp = nuclei::estimate_mpp(rgb, p);
  const cv::Mat labels = nuclei::segment(rgb, p);
  nuclei::features::Options fo;
  fo.mpp = p.mpp;
  const std::string key = file.stem().string();
  rows.add(key, nuclei::features::compute(rgb, labels, fo));
  cv::Mat u16;
  labels.convertTo(u16, CV_16U);
  write_file(out / "labels" / (key + ".png"), png(u16));
  io::draw_contours(rgb, labels, cv::Scalar(0, 255, 0));
  cv::cvtColor(rgb, bgr, cv::COLOR_RGB2BGR);
  write_file(out / "overlay" / (key + ".png"), png(bgr));
}

// The files on `threads` threads, each taking the next file; the rows are
// written in file order at the end.
void direct(const std::vector<fs::path>& files, const fs::path& out, int threads) {
  fs::create_directories(out / "labels");
  fs::create_directories(out / "overlay");
  std::vector<Rows> rows(files.size());
  std::atomic<std::size_t> next{0};
  std::mutex m;
  std::string failure;
  const auto work = [&] {
    cv::setNumThreads(1);
    try {
      for (std::size_t i; (i = next++) < files.size();)
        direct_tile(files[i], out, rows[i]);
    } catch (const std::exception& e) {
      std::lock_guard lk(m);
      failure = e.what();
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back(work);
  for (auto& t : pool)
    t.join();
  if (!failure.empty()) throw Error("direct: " + failure);
  Rows all;
  for (auto& r : rows)
    all.append(std::move(r));
  all.write(out / "features.h5");
}

std::vector<workflow::Override> overrides(const fs::path& in, const fs::path& out) {
  return {{"input", in.string()}, {"output", out.string()}};
}

// The flowd command as a user runs it; wall clock and the child's rusage.
Timing command(const fs::path& in, const fs::path& out, int workers) {
  const std::vector<std::string> args = {FLOWD_BINARY,
                                         "run",
                                         FLOWD_SOURCE_DIR "/workflows/nuclei.json",
                                         "--cpu",
                                         std::to_string(workers),
                                         "--set",
                                         "input=" + in.string(),
                                         "--set",
                                         "output=" + out.string()};
  std::vector<char*> argv;
  for (const auto& a : args)
    argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const auto t0 = Clock::now();
  const pid_t pid = ::fork();
  if (pid < 0) throw Error("fork failed");
  if (pid == 0) {
    std::FILE* null = std::freopen("/dev/null", "w", stderr);
    static_cast<void>(null);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  int status = 0;
  rusage u{};
  if (::wait4(pid, &status, 0, &u) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw Error("the flowd command failed (" + std::string(FLOWD_BINARY) + " run ... exit " +
                std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + ")");
  const double wall = seconds_since(t0);
  const double cpu = static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
                     1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
  return {wall, cpu, u.ru_minflt};
}

struct Series {
  std::vector<double> wall, cpu, faults;
  void add(const Timing& t) {
    wall.push_back(t.wall), cpu.push_back(t.cpu), faults.push_back(static_cast<double>(t.faults));
  }
};

// The flowd side: the graph is built before the clock starts.
Timing through_flowd(plugin::Registry& reg, Logger& log, const fs::path& in, const fs::path& out, int workers,
                     int tiles) {
  auto g =
      workflow::validate(workflow::load_workflow(FLOWD_SOURCE_DIR "/workflows/nuclei.json", overrides(in, out)), reg);
  runtime::RunOptions ro;
  ro.cpu_workers = workers;
  ro.gpus = runtime::GpuSpec::parse("none");
  runtime::Run run(g, ro, log);
  runtime::RunReport rep;
  const Timing t = measure([&] { rep = run.execute(); });
  if (rep.status != runtime::RunStatus::succeeded) throw Error("the flowd run failed: " + rep.error);
  if (rep.final.retired_items != static_cast<std::uint64_t>(tiles))
    throw Error("the flowd run processed " + std::to_string(rep.final.retired_items) + " tiles");
  return t;
}

// On its own thread, as a flowd worker runs it (overhead.cpp says why).
Timing through_direct(const std::vector<fs::path>& files, const fs::path& out, int threads) {
  Timing a;
  std::thread t([&] { a = measure([&] { direct(files, out, threads); }); });
  t.join();
  return a;
}

std::string file_bytes(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// Both sides did the same work: the label and overlay images are the same
// bytes.
void check_same_images(const std::vector<fs::path>& files, const fs::path& a, const fs::path& b) {
  for (const auto& f : files)
    for (const char* dir : {"labels", "overlay"}) {
      const fs::path rel = fs::path(dir) / (f.stem().string() + ".png");
      const std::string x = file_bytes(a / rel), y = file_bytes(b / rel);
      if (x.empty() || x != y) throw Error("direct and flowd wrote different " + rel.string());
    }
}

}  // namespace

int nuclei_folder_overhead(const FolderOptions& o) {
  // Both sides with the allocator settings of the flowd command: with
  // glibc's defaults the direct loop took three times the page faults of
  // flowd's worker (util/malloc_tuning.hpp), ~1.5 ms a tile in flowd's favour.
  tune_malloc_for_tiles();
  Logger log(stderr, false, LogLevel::warning);
  plugin::Registry reg({{FLOWD_SHIPPED_PLUGIN_DIR, "shipped", true}}, log);
  reg.scan();
  const fs::path root = fs::temp_directory_path() / "flowd-bench-nuclei-folder";
  const fs::path in = root / "tiles", out = root / "out", out2 = root / "out-direct";
  const auto files = write_tiles(in, o.tiles, o.size);

  if (!o.only.empty()) {  // one side only, e.g. under perf
    for (int r = 0; r < o.repeat; ++r) {
      fs::remove_all(out);
      const Timing t = o.only == "direct"  ? through_direct(files, out, o.workers)
                       : o.only == "flowd" ? through_flowd(reg, log, in, out, o.workers, o.tiles)
                                           : command(in, out, o.workers);
      std::printf("%s: %.3f s wall, %.3f s cpu\n", o.only.c_str(), t.wall, t.cpu);
    }
    fs::remove_all(out);
    return 0;
  }

  std::printf("# machine parallel efficiency with 2 threads: %.2f\n", parallel_efficiency());
  std::printf(
      "# a folder of %d generated %dx%d PNG tiles (40x and 20x), workflows/nuclei.json with defaults;\n"
      "# direct: the same functions on %d thread(s), plain file writes; flowd: Run::execute with %d CPU "
      "worker(s), no GPU;\n# command: flowd run --cpu %d (whole process). Medians of %d interleaved runs.\n",
      o.tiles, o.size, o.size, o.workers, o.workers, o.workers, o.repeat);
  std::fflush(stdout);
  Series d, f, c;
  for (int r = 0; r < o.repeat + 1; ++r) {
    fs::remove_all(out2);
    const Timing a = through_direct(files, out2, o.workers);
    fs::remove_all(out);
    const Timing b = through_flowd(reg, log, in, out, o.workers, o.tiles);
    if (r == 0) check_same_images(files, out2, out);
    Timing x;
    if (o.cli) {
      fs::remove_all(out);
      x = command(in, out, o.workers);
    }
    fs::remove_all(out);
    fs::remove_all(out2);
    if (r == 0) continue;  // warm-up
    d.add(a), f.add(b), c.add(x);
  }
  const double n = o.tiles;
  // Throughput against direct: the median of the paired ratios direct / side,
  // wall and CPU; the engine's cost per tile from the medians.
  const auto row = [&](const char* name, const Series& s) {
    std::vector<double> rw, rc;
    for (std::size_t i = 0; i < s.wall.size(); ++i)
      rw.push_back(d.wall[i] / s.wall[i]), rc.push_back(d.cpu[i] / s.cpu[i]);
    const double w = median(s.wall), cpu = median(s.cpu), dw = median(d.wall), dc = median(d.cpu);
    std::printf(
        "%-8s wall %7.3f s  cpu %7.3f s | per tile %6.2f ms wall %6.2f ms cpu | throughput vs direct: wall "
        "%.3f cpu %.3f | per tile vs direct %+.2f ms wall %+.2f ms cpu | %.0f page faults\n",
        name, w, cpu, 1e3 * w / n, 1e3 * cpu / n, median(rw), median(rc), 1e3 * (w - dw) / n, 1e3 * (cpu - dc) / n,
        median(s.faults));
  };
  row("direct", d);
  row("flowd", f);
  if (o.cli) row("command", c);
  return 0;
}

}  // namespace flowd::bench
