// Exact Euclidean distance transform in integers (Meijster et al. 2000):
//   column pass: one thread per column (coalesced across a warp) computes g,
//     the vertical distance to the nearest 0 pixel of the column, downwards
//     then upwards; columns without a 0 get "far" = rows + cols;
//   row pass: one thread per row builds the lower envelope of the parabolas
//     (x - i)^2 + g(i)^2 with exact integer separators (floor division) and
//     reads d2 off it.
// d2 is the exact minimum squared distance whichever envelope algorithm finds
// it (the CPU uses Felzenszwalb's with fractional boundaries), so the output
// sqrtf((float)d2) - both conversions correctly rounded - is bit-identical.
// "far" is larger than any real distance (far^2 > (rows-1)^2 + (cols-1)^2),
// so a column without a 0 never wins while some column has one; an image
// without a 0 pixel is all +inf, as defined.
#include <cmath>

#include "common.cuh"

namespace flowd::nuclei::gpu {

namespace {
using namespace detail;

__global__ void columns_pass(In<std::uint8_t> mask, int* g, int rows, int cols, int far, int* any_zero) {
  const int x = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (x >= cols) return;
  int d = far;
  bool zero = false;
  for (int y = 0; y < rows; ++y) {
    if (mask.at(y, x) == 0) {
      d = 0;
      zero = true;
    } else if (d < far) {
      ++d;
    }
    g[static_cast<long long>(y) * cols + x] = d;
  }
  for (int y = rows - 2; y >= 0; --y) {
    int* gy = g + static_cast<long long>(y) * cols + x;
    const int below = gy[cols];
    if (below < far && below + 1 < *gy) *gy = below + 1;
  }
  if (zero) atomicOr(any_zero, 1);
}

__device__ __forceinline__ long long floor_div(long long a, long long b) {  // b > 0
  long long q = a / b;
  if ((a % b != 0) && (a < 0)) --q;
  return q;
}

// Meijster's second phase for row y; s (apexes) and t (start of each
// apex's segment) are this row's scratch.
__global__ void rows_pass(In<std::uint8_t> mask, const int* g, int* s_all, int* t_all, Out<float> out, int rows,
                          int cols, const int* any_zero) {
  const int y = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (y >= rows) return;
  const int* gy = g + static_cast<long long>(y) * cols;
  if (*any_zero == 0) {
    for (int x = 0; x < cols; ++x) out.at(y, x) = __int_as_float(0x7f800000);  // +inf
    return;
  }
  int* s = s_all + static_cast<long long>(y) * cols;
  int* t = t_all + static_cast<long long>(y) * cols;
  auto f = [&](long long x, int i) {
    const long long dx = x - i, gi = gy[i];
    return dx * dx + gi * gi;
  };
  int q = 0;
  s[0] = 0;
  t[0] = 0;
  for (int u = 1; u < cols; ++u) {
    while (q >= 0 && f(t[q], s[q]) > f(t[q], u)) --q;
    if (q < 0) {
      q = 0;
      s[0] = u;
    } else {
      const long long i = s[q], gi = gy[s[q]], gu = gy[u];
      const long long w = 1 + floor_div(static_cast<long long>(u) * u - i * i + gu * gu - gi * gi, 2 * (u - i));
      if (w < cols) {
        ++q;
        s[q] = u;
        t[q] = static_cast<int>(w);
      }
    }
  }
  for (int u = cols - 1; u >= 0; --u) {
    const long long d2 = f(u, s[q]);
    out.at(y, u) = mask.at(y, u) == 0 ? 0.0f : __fsqrt_rn(__ll2float_rn(d2));
    if (u == t[q]) --q;
  }
}

}  // namespace

void distance_transform(const Launch& l, ConstImage<std::uint8_t> mask, Image<float> out) {
  const char* op = "distance_transform";
  check_in(op, mask);
  check_out(op, out);
  same_size(op, mask, out);
  const long long n = static_cast<long long>(mask.rows) * mask.cols;
  if (n == 0) return;
  // far^2 and the separators' numerators stay far inside 64 bits.
  if (static_cast<long long>(mask.rows) + mask.cols >= (1LL << 30)) fail(op, "rows + cols must be below 2^30");
  DeviceScope on(l.device, op);
  Ctx c(l, op);
  const int far = mask.rows + mask.cols;
  int* g = c.alloc<int>(n);
  int* s = c.alloc<int>(n);
  int* t = c.alloc<int>(n);
  int* any_zero = c.alloc<int>(1);
  c.memset(any_zero, 0, sizeof(int), "clearing the zero flag");
  columns_pass<<<(mask.cols + 127) / 128, 128, 0, c.stream>>>(in_view(mask), g, mask.rows, mask.cols, far, any_zero);
  c.launched("launching the column pass");
  rows_pass<<<(mask.rows + 127) / 128, 128, 0, c.stream>>>(in_view(mask), g, s, t, out_view(out), mask.rows, mask.cols,
                                                            any_zero);
  c.launched("launching the row pass");
}

}  // namespace flowd::nuclei::gpu
