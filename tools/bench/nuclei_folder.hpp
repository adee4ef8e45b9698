#pragma once
// flowd-bench-nuclei overhead --tiles N: the engine's overhead on a folder of
// small tiles (issue 13). N generated H&E tiles are written as PNG files;
// then, interleaved run by run, the same work is done
//   (a) directly: the operators' functions called in a loop on W threads
//       (PNG decode, mpp estimate, segment, features, the label and overlay
//       PNGs written, the feature rows written to one HDF5 file),
//   (b) by flowd in this process: workflows/nuclei.json with input = the
//       folder, W CPU workers, no GPU (runtime::Run::execute, graph built
//       beforehand),
//   (c) by the flowd command: `flowd run workflows/nuclei.json --cpu W
//       --set input=DIR --set output=OUT`, the whole process (start-up,
//       plugin loading, validation, performance model) timed by wall clock
//       and its rusage.
#include <string>

namespace flowd::bench {

struct FolderOptions {
  int tiles = 64;    // number of tiles in the folder
  int size = 512;    // tile side in pixels
  int repeat = 5;    // measured runs of each side (after one warm-up)
  int workers = 1;   // flowd CPU workers = direct threads
  bool cli = true;   // also time the flowd command
  std::string only;  // "direct", "flowd" or "command": that side alone, `repeat` times (for profiling)
};

int nuclei_folder_overhead(const FolderOptions& options);

}  // namespace flowd::bench
