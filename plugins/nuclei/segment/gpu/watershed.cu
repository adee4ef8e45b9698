// Watershed markers and the marker watershed (segment.hpp defines both).
//
// Markers: the h-maxima transform is reconstruct(dist - h, dist) on ordered
// keys (reconstruct.cu); the plateaus of the domain dist > 0 are the
// components of equal-valued 8-neighbours (union-find); a plateau is a
// regional maximum unless one of its pixels has a strictly higher domain
// neighbour. That is the CPU's set (its candidates-with-no-equal-non-candidate
// flood selects exactly these plateaus); labelling it with the union-find
// labeller numbers the maxima in raster order of their first pixel, as the
// CPU's label() does.
//
// Watershed: each step of the definition is a function of neighbourhood
// values, so it is computed per pixel in parallel:
//   steepest-ascent pointers compare keys in the fixed order N..NW with the
//     first strict maximum winning, as the CPU's loop;
//   lc is the CPU's breadth-first distance computed by rounds: round k gives
//     k to every unreached plateau pixel with an equal-valued neighbour at
//     k - 1 (a pixel reached in round k cannot be taken for k - 1 by another
//     in the same round, so rounds are race-free and equal BFS layers);
//   labels follow the pointers by pointer jumping (nxt = nxt[nxt]) until no
//     pointer changes; pointers strictly increase (r, -lc), so there are no
//     cycles, and each pixel ends at the CPU's path end.
#include <algorithm>

#include "common.cuh"

namespace flowd::nuclei::gpu {

namespace {
using namespace detail;

#define FLOWD_GRID_STRIDE(i, n)                                                               \
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < (n); \
       i += static_cast<long long>(gridDim.x) * blockDim.x)

// ---- markers -----------------------------------------------------------------

__global__ void lowered_keys(In<float> dist, float h, std::uint32_t* j, std::uint32_t* i, std::uint8_t* domain,
                             int cols, long long n) {
  FLOWD_GRID_STRIDE(p, n) {
    const int y = static_cast<int>(p / cols), x = static_cast<int>(p % cols);
    const float d = dist.at(y, x);
    j[p] = float_key(__fsub_rn(d, h));
    i[p] = float_key(d);
    domain[p] = d > 0.0f ? 1 : 0;
  }
}

__global__ void flag_lower_plateaus(const std::uint32_t* r, const std::uint8_t* domain, const int* parent,
                                    int* not_max, int rows, int cols, long long n) {
  FLOWD_GRID_STRIDE(p, n) {
    if (!domain[p]) continue;
    const int y = static_cast<int>(p / cols), x = static_cast<int>(p % cols);
    const std::uint32_t v = r[p];
    bool higher = false;
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      const int yy = y + ndy(k), xx = x + ndx(k);
      if (yy < 0 || yy >= rows || xx < 0 || xx >= cols) continue;
      const long long q = static_cast<long long>(yy) * cols + xx;
      higher |= domain[q] && r[q] > v;
    }
    if (higher) atomicOr(not_max + parent[p], 1);  // many pixels of a plateau may report
  }
}

__global__ void maxima_mask(const std::uint8_t* domain, const int* parent, const int* not_max, std::uint8_t* maxima,
                            long long n) {
  FLOWD_GRID_STRIDE(p, n) { maxima[p] = (domain[p] && !not_max[parent[p]]) ? 255 : 0; }
}

// ---- watershed ---------------------------------------------------------------

constexpr int kFar = 0x7fffffff;
enum : std::uint8_t { kOutside = 0, kZone = 1, kMarker = 2 };

__global__ void imposed_keys(In<float> dist, In<std::int32_t> markers, In<std::uint8_t> mask, std::uint32_t* j,
                             std::uint32_t* i, std::uint8_t* kind, int cols, long long n) {
  FLOWD_GRID_STRIDE(p, n) {
    const int y = static_cast<int>(p / cols), x = static_cast<int>(p % cols);
    const float d = dist.at(y, x);
    const std::int32_t m = markers.at(y, x);
    j[p] = float_key(m > 0 ? d : 0.0f);
    i[p] = float_key(d);
    kind[p] = mask.at(y, x) ? (m > 0 ? kMarker : kZone) : kOutside;
  }
}

// Steepest ascent: the first strictly highest neighbour in the order N..NW;
// pixels outside the image count as -inf (never higher).
__global__ void steepest(const std::uint32_t* r, const std::uint8_t* kind, std::uint8_t* dir, int* lc, int rows,
                         int cols, long long n) {
  FLOWD_GRID_STRIDE(p, n) {
    std::uint8_t bd = 8;
    if (kind[p] == kZone) {
      const int y = static_cast<int>(p / cols), x = static_cast<int>(p % cols);
      std::uint32_t best = r[p];
#pragma unroll
      for (int k = 0; k < 8; ++k) {
        const int yy = y + ndy(k), xx = x + ndx(k);
        if (yy < 0 || yy >= rows || xx < 0 || xx >= cols) continue;
        const std::uint32_t v = r[static_cast<long long>(yy) * cols + xx];
        if (v > best) {
          best = v;
          bd = static_cast<std::uint8_t>(k);
        }
      }
    }
    dir[p] = bd;
    lc[p] = bd < 8 ? 0 : kFar;
  }
}

// Round k of the plateau breadth-first search (see the file comment).
__global__ void plateau_round(const std::uint32_t* r, const std::uint8_t* kind, int* lc, int k, int* grew, int rows,
                              int cols, long long n) {
  FLOWD_GRID_STRIDE(p, n) {
    if (kind[p] != kZone || lc[p] != kFar) continue;
    const int y = static_cast<int>(p / cols), x = static_cast<int>(p % cols);
    const std::uint32_t v = r[p];
    bool reached = false;
#pragma unroll
    for (int d = 0; d < 8; ++d) {
      const int yy = y + ndy(d), xx = x + ndx(d);
      if (yy < 0 || yy >= rows || xx < 0 || xx >= cols) continue;
      const long long q = static_cast<long long>(yy) * cols + xx;
      // lc[q] may be set to k concurrently: it reads kFar or k, never k - 1.
      reached |= kind[q] == kZone && r[q] == v && __ldcg(lc + q) == k - 1;
    }
    if (reached) {
      lc[p] = k;
      atomicOr(grew, 1);
    }
  }
}

// Plateau pixels point to the first equal-valued zone neighbour one step
// closer to the plateau's exit; then every pixel gets its successor (itself
// when it ends a path).
__global__ void successors(const std::uint32_t* r, const std::uint8_t* kind, std::uint8_t* dir, const int* lc,
                           int* nxt, int rows, int cols, long long n) {
  FLOWD_GRID_STRIDE(p, n) {
    const int y = static_cast<int>(p / cols), x = static_cast<int>(p % cols);
    std::uint8_t d = dir[p];
    const int l = lc[p];
    if (kind[p] == kZone && d == 8 && l != kFar) {
      const std::uint32_t v = r[p];
      for (int k = 0; k < 8; ++k) {
        const int yy = y + ndy(k), xx = x + ndx(k);
        if (yy < 0 || yy >= rows || xx < 0 || xx >= cols) continue;
        const long long q = static_cast<long long>(yy) * cols + xx;
        if (kind[q] == kZone && r[q] == v && lc[q] == l - 1) {
          d = static_cast<std::uint8_t>(k);
          break;
        }
      }
      dir[p] = d;
    }
    nxt[p] = d < 8 ? (y + ndy(d)) * cols + (x + ndx(d)) : static_cast<int>(p);
  }
}

// One jumping pass. Concurrent passes of neighbours only ever replace a
// successor by a later pixel of the same path, so whatever a read returns is
// on the path; a pass that changes nothing has reached the fixed point.
__global__ void jump(int* nxt, int* changed, long long n) {
  FLOWD_GRID_STRIDE(p, n) {
    const int a = __ldcg(nxt + p);
    const int b = __ldcg(nxt + a);
    if (a != b) {
      nxt[p] = b;
      atomicOr(changed, 1);
    }
  }
}

__global__ void write_basins(const int* nxt, const std::uint8_t* kind, In<std::int32_t> markers, Out<std::int32_t> out,
                             int cols, long long n) {
  FLOWD_GRID_STRIDE(p, n) {
    const int e = nxt[p];
    const int ey = e / cols, ex = e % cols;
    out.at(static_cast<int>(p / cols), static_cast<int>(p % cols)) = kind[e] == kMarker ? markers.at(ey, ex) : 0;
  }
}

#undef FLOWD_GRID_STRIDE

// Runs `step(k, flag)` for k = 1, 2, ... until a step reports nothing done;
// the host looks only every `stride` steps (a step that does nothing leaves
// all later steps doing nothing, so the batch's last flag decides).
template <class Step> void until_quiet(const Ctx& c, Step step, const char* what) {
  constexpr int kMaxStride = 32;
  int* flags = c.alloc<int>(kMaxStride);
  int k = 0;
  for (int stride = 2;; stride = std::min(stride * 2, kMaxStride)) {
    c.memset(flags, 0, kMaxStride * sizeof(int), what);
    for (int s = 0; s < stride; ++s) step(++k, flags + s);
    if (c.read(flags + stride - 1, what) == 0) return;
  }
}

}  // namespace

int watershed_markers(const Launch& l, ConstImage<float> dist, float h, Image<std::int32_t> markers) {
  const char* op = "watershed_markers";
  check_in(op, dist);
  check_out(op, markers);
  same_size(op, dist, markers);
  const long long n = static_cast<long long>(dist.rows) * dist.cols;
  if (n == 0) return 0;
  const int rows = dist.rows, cols = dist.cols;
  DeviceScope on(l.device, op);
  Ctx c(l, op);
  auto* r = c.alloc<std::uint32_t>(n);
  auto* i = c.alloc<std::uint32_t>(n);
  auto* domain = c.alloc<std::uint8_t>(n);
  lowered_keys<<<c.blocks(n), kThreads, 0, c.stream>>>(in_view(dist), h, r, i, domain, cols, n);
  c.launched("launching the h-maxima keys");
  reconstruct_keys(c, r, i, rows, cols);
  int* parent = c.alloc<int>(n);
  union_find_equal(c, domain, r, rows, cols, parent);
  int* not_max = c.alloc<int>(n);
  c.memset(not_max, 0, static_cast<std::size_t>(n) * sizeof(int), "clearing the plateau flags");
  flag_lower_plateaus<<<c.blocks(n), kThreads, 0, c.stream>>>(r, domain, parent, not_max, rows, cols, n);
  c.launched("launching the plateau test");
  auto* maxima = c.alloc<std::uint8_t>(n);
  maxima_mask<<<c.blocks(n), kThreads, 0, c.stream>>>(domain, parent, not_max, maxima, n);
  c.launched("launching the maxima mask");
  // `parent` is reused: the plateau forest is no longer needed.
  union_find_mask(c, In<std::uint8_t>{maxima, cols, 1, 1}, rows, cols, Connect::eight_foreground, parent);
  return compact_labels(c, parent, rows, cols, out_view(markers));
}

void watershed(const Launch& l, ConstImage<float> dist, ConstImage<std::int32_t> markers, ConstImage<std::uint8_t> mask,
               Image<std::int32_t> out) {
  const char* op = "watershed";
  check_in(op, dist);
  check_in(op, markers);
  check_in(op, mask);
  check_out(op, out);
  same_size(op, dist, markers);
  same_size(op, dist, mask);
  same_size(op, dist, out);
  const long long n = static_cast<long long>(dist.rows) * dist.cols;
  if (n == 0) return;
  const int rows = dist.rows, cols = dist.cols;
  DeviceScope on(l.device, op);
  Ctx c(l, op);
  auto* r = c.alloc<std::uint32_t>(n);
  auto* i = c.alloc<std::uint32_t>(n);
  auto* kind = c.alloc<std::uint8_t>(n);
  imposed_keys<<<c.blocks(n), kThreads, 0, c.stream>>>(in_view(dist), in_view(markers), in_view(mask), r, i, kind,
                                                        cols, n);
  c.launched("launching the maxima imposition");
  reconstruct_keys(c, r, i, rows, cols);
  auto* dir = c.alloc<std::uint8_t>(n);
  int* lc = c.alloc<int>(n);
  steepest<<<c.blocks(n), kThreads, 0, c.stream>>>(r, kind, dir, lc, rows, cols, n);
  c.launched("launching the steepest ascent");
  until_quiet(
      c,
      [&](int k, int* grew) {
        plateau_round<<<c.blocks(n), kThreads, 0, c.stream>>>(r, kind, lc, k, grew, rows, cols, n);
        c.launched("launching a plateau round");
      },
      "the plateau distance rounds");
  int* nxt = c.alloc<int>(n);
  successors<<<c.blocks(n), kThreads, 0, c.stream>>>(r, kind, dir, lc, nxt, rows, cols, n);
  c.launched("launching the successors");
  until_quiet(
      c,
      [&](int, int* changed) {
        jump<<<c.blocks(n), kThreads, 0, c.stream>>>(nxt, changed, n);
        c.launched("launching a pointer jump");
      },
      "the pointer jumping");
  write_basins<<<c.blocks(n), kThreads, 0, c.stream>>>(nxt, kind, in_view(markers), out_view(out), cols, n);
  c.launched("launching the basin labels");
}

}  // namespace flowd::nuclei::gpu
