// Connected components by union-find (Playne & Hawick's label equivalence
// with atomicMin linking), and what is built on it: label, area_threshold,
// fill_holes, and the plateau forests of the watershed markers.
//
// parent[p] <= p always, and a union links the larger of two roots under the
// smaller, so a component's final root is its smallest linear index, i.e.
// its first pixel in raster order. Numbering the roots by a prefix sum over
// "p is a root" therefore gives labels 1..n in the raster order of each
// component's first pixel - the CPU's numbering exactly, not just up to a
// renumbering. The forest itself depends on the order of the races, but the
// partition into components does not.
#include <cub/device/device_scan.cuh>

#include "common.cuh"

namespace flowd::nuclei::gpu {

namespace detail {
namespace {

// Walks to the root through L2: other threads relink roots with atomics
// during the merge kernel; a stale L1 copy would still be an ancestor, but
// reading L2 keeps the walks short.
__device__ __forceinline__ int find_root(const int* parent, int x) {
  int p = __ldcg(parent + x);
  while (p != x) {
    x = p;
    p = __ldcg(parent + x);
  }
  return x;
}

// find_root with path halving, for the merge kernel: each visited pixel is
// pointed at its grandparent. That value is an ancestor (smaller, same set),
// and a link the store may overwrite is one a concurrent unite() made with
// atomicMin on a pixel that was no longer a root; that unite goes on to join
// the pixel's former parent instead, so no connection is lost.
__device__ __forceinline__ int find_root_halving(int* parent, int x) {
  for (;;) {
    const int p = __ldcg(parent + x);
    if (p == x) return x;
    const int g = __ldcg(parent + p);
    if (g != p) __stcg(parent + x, g);
    x = p;
  }
}

// Links the two trees. atomicMin on a root either links it (it returned the
// root itself) or finds it already linked elsewhere, and then the union goes
// on from where it points; either way no link is lost and parent[p] <= p.
__device__ void unite(int* parent, int a, int b) {
  for (;;) {
    a = find_root_halving(parent, a);
    b = find_root_halving(parent, b);
    if (a == b) return;
    if (a < b) {
      const int t = a;
      a = b;
      b = t;
    }
    const int old = atomicMin(parent + a, b);
    if (old == a) return;
    a = old;
  }
}

struct MaskMembers {
  In<std::uint8_t> mask;
  bool foreground;
  __device__ bool member(int y, int x, int) const { return (mask.at(y, x) != 0) == foreground; }
  __device__ bool joined(int, int) const { return true; }
};
struct EqualKeys {
  const std::uint8_t* member_flag;
  const std::uint32_t* key;
  __device__ bool member(int, int, int p) const { return member_flag[p] != 0; }
  __device__ bool joined(int p, int q) const { return key[p] == key[q]; }
};

template <class M> __global__ void uf_init(M m, int* parent, int cols, long long n) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const int p = static_cast<int>(i), y = p / cols, x = p % cols;
    parent[p] = m.member(y, x, p) ? p : -1;
  }
}

// Each pixel unites with its already-scanned neighbours (W, NW, N, NE; or W,
// N when 4-connected): every adjacent pair is considered once.
template <class M, bool Eight> __global__ void uf_merge(M m, int* parent, int rows, int cols, long long n) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const int p = static_cast<int>(i), y = p / cols, x = p % cols;
    if (!m.member(y, x, p)) continue;
    const int dys[4] = {0, -1, -1, -1}, dxs[4] = {-1, 0, -1, 1};
#pragma unroll
    for (int k = 0; k < (Eight ? 4 : 2); ++k) {
      const int yy = y + dys[k], xx = x + dxs[k];
      if (yy < 0 || xx < 0 || xx >= cols) continue;
      const int q = yy * cols + xx;
      if (m.member(yy, xx, q) && m.joined(p, q)) unite(parent, p, q);
    }
  }
  static_cast<void>(rows);
}

__global__ void uf_flatten(int* parent, long long n) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const int p = static_cast<int>(i);
    if (parent[p] >= 0) parent[p] = find_root(parent, p);
  }
}

template <class M> void run_union_find(const Ctx& c, M m, int rows, int cols, bool eight, int* parent) {
  const long long n = static_cast<long long>(rows) * cols;
  if (n == 0) return;
  uf_init<<<c.blocks(n), kThreads, 0, c.stream>>>(m, parent, cols, n);
  c.launched("launching the union-find initialisation");
  if (eight)
    uf_merge<M, true><<<c.blocks(n), kThreads, 0, c.stream>>>(m, parent, rows, cols, n);
  else
    uf_merge<M, false><<<c.blocks(n), kThreads, 0, c.stream>>>(m, parent, rows, cols, n);
  c.launched("launching the union-find merge");
  uf_flatten<<<c.blocks(n), kThreads, 0, c.stream>>>(parent, n);
  c.launched("launching the union-find flattening");
}

__global__ void root_flags(const int* parent, int* flag, long long n) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x)
    flag[i] = parent[i] == static_cast<int>(i) ? 1 : 0;
}

__global__ void write_labels(const int* parent, const int* rank, Out<std::int32_t> out, int cols, long long n) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const int r = parent[i];
    out.at(static_cast<int>(i / cols), static_cast<int>(i % cols)) = r >= 0 ? rank[r] : 0;
  }
}

}  // namespace

void union_find_mask(const Ctx& c, In<std::uint8_t> mask, int rows, int cols, Connect how, int* parent) {
  const bool fg = how == Connect::eight_foreground;
  run_union_find(c, MaskMembers{mask, fg}, rows, cols, fg, parent);
}

void union_find_equal(const Ctx& c, const std::uint8_t* member, const std::uint32_t* key, int rows, int cols,
                      int* parent) {
  run_union_find(c, EqualKeys{member, key}, rows, cols, true, parent);
}

int compact_labels(const Ctx& c, const int* parent, int rows, int cols, Out<std::int32_t> out) {
  const long long n = static_cast<long long>(rows) * cols;
  if (n == 0) return 0;
  int* flag = c.alloc<int>(n);
  int* rank = c.alloc<int>(n);
  root_flags<<<c.blocks(n), kThreads, 0, c.stream>>>(parent, flag, n);
  c.launched("launching the root flags");
  std::size_t temp_bytes = 0;
  check(cub::DeviceScan::InclusiveSum(nullptr, temp_bytes, flag, rank, static_cast<int>(n), c.stream), c.op,
        "sizing the label scan");
  void* temp = c.alloc<unsigned char>(static_cast<long long>(temp_bytes));
  check(cub::DeviceScan::InclusiveSum(temp, temp_bytes, flag, rank, static_cast<int>(n), c.stream), c.op,
        "the label scan");
  write_labels<<<c.blocks(n), kThreads, 0, c.stream>>>(parent, rank, out, cols, n);
  c.launched("launching the label writing");
  return c.read(rank + (n - 1), "reading the label count");
}

}  // namespace detail

namespace {
using namespace detail;

__global__ void count_areas(const int* parent, int* area, long long n) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const int r = parent[i];
    if (r >= 0) atomicAdd(area + r, 1);
  }
}

__global__ void keep_areas(const int* parent, const int* area, Out<std::uint8_t> out, int cols, long long n,
                           int min_area, int max_area) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const int r = parent[i];
    bool keep = false;
    if (r >= 0) {
      const int a = area[r];
      keep = a >= min_area && (max_area <= 0 || a <= max_area);
    }
    out.at(static_cast<int>(i / cols), static_cast<int>(i % cols)) = keep ? 255 : 0;
  }
}

// Marks the roots of background components that reach the border.
__global__ void mark_border(const int* parent, int* outside, int rows, int cols) {
  const long long border = 2LL * cols + 2LL * rows;
  for (long long k = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; k < border;
       k += static_cast<long long>(gridDim.x) * blockDim.x) {
    int y, x;
    if (k < cols) {
      y = 0;
      x = static_cast<int>(k);
    } else if (k < 2LL * cols) {
      y = rows - 1;
      x = static_cast<int>(k - cols);
    } else if (k < 2LL * cols + rows) {
      y = static_cast<int>(k - 2LL * cols);
      x = 0;
    } else {
      y = static_cast<int>(k - 2LL * cols - rows);
      x = cols - 1;
    }
    const int r = parent[static_cast<long long>(y) * cols + x];
    if (r >= 0) atomicOr(outside + r, 1);  // many border pixels may share a root
  }
}

__global__ void write_filled(const int* parent, const int* outside, Out<std::uint8_t> out, int cols, long long n) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const int r = parent[i];
    out.at(static_cast<int>(i / cols), static_cast<int>(i % cols)) = (r >= 0 && outside[r]) ? 0 : 255;
  }
}

void check_mask_pair(const char* op, const ConstImage<std::uint8_t>& mask, const Image<std::uint8_t>& out) {
  check_in(op, mask);
  check_out(op, out);
  same_size(op, mask, out);
}

}  // namespace

int label(const Launch& l, ConstImage<std::uint8_t> mask, Image<std::int32_t> out) {
  const char* op = "label";
  check_in(op, mask);
  check_out(op, out);
  same_size(op, mask, out);
  const long long n = static_cast<long long>(mask.rows) * mask.cols;
  if (n == 0) return 0;
  DeviceScope on(l.device, op);
  Ctx c(l, op);
  int* parent = c.alloc<int>(n);
  union_find_mask(c, in_view(mask), mask.rows, mask.cols, Connect::eight_foreground, parent);
  return compact_labels(c, parent, mask.rows, mask.cols, out_view(out));
}

void area_threshold(const Launch& l, ConstImage<std::uint8_t> mask, int min_area, int max_area,
                    Image<std::uint8_t> out) {
  const char* op = "area_threshold";
  check_mask_pair(op, mask, out);
  const long long n = static_cast<long long>(mask.rows) * mask.cols;
  if (n == 0) return;
  DeviceScope on(l.device, op);
  Ctx c(l, op);
  int* parent = c.alloc<int>(n);
  int* area = c.alloc<int>(n);
  union_find_mask(c, in_view(mask), mask.rows, mask.cols, Connect::eight_foreground, parent);
  c.memset(area, 0, static_cast<std::size_t>(n) * sizeof(int), "clearing the areas");
  count_areas<<<c.blocks(n), kThreads, 0, c.stream>>>(parent, area, n);
  c.launched("launching the area count");
  keep_areas<<<c.blocks(n), kThreads, 0, c.stream>>>(parent, area, out_view(out), mask.cols, n, min_area, max_area);
  c.launched("launching the area filter");
}

void fill_holes(const Launch& l, ConstImage<std::uint8_t> mask, Image<std::uint8_t> out) {
  const char* op = "fill_holes";
  check_mask_pair(op, mask, out);
  const long long n = static_cast<long long>(mask.rows) * mask.cols;
  if (n == 0) return;
  DeviceScope on(l.device, op);
  Ctx c(l, op);
  int* parent = c.alloc<int>(n);
  int* outside = c.alloc<int>(n);
  union_find_mask(c, in_view(mask), mask.rows, mask.cols, Connect::four_background, parent);
  c.memset(outside, 0, static_cast<std::size_t>(n) * sizeof(int), "clearing the border flags");
  mark_border<<<c.blocks(2LL * (mask.rows + mask.cols)), kThreads, 0, c.stream>>>(parent, outside, mask.rows,
                                                                                  mask.cols);
  c.launched("launching the border marking");
  write_filled<<<c.blocks(n), kThreads, 0, c.stream>>>(parent, outside, out_view(out), mask.cols, n);
  c.launched("launching the hole filling");
}

}  // namespace flowd::nuclei::gpu
