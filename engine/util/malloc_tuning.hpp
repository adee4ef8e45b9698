#pragma once
// The allocator settings the flowd command runs with.
//
// glibc returns freed memory at the top of a heap to the kernel once more
// than twice the largest freed mmap'ed block is free, and hands out blocks
// above a (growing) threshold by mmap. A job of small tiles frees ~10-20 MB of
// 1 MB buffers after every tile; by default most of it went back to the kernel
// and came back as fresh zeroed pages for the next tile: ~1,500 page faults,
// ~2.5 ms, on a ~55 ms 512² tile of the nuclei job (docs/benchmarks.md, §5.4).
// flowd keeps up to 64 MiB free per heap and serves blocks below 32 MiB
// (items, and the messages that carry them between nodes) from the heaps;
// larger ones (whole 4096² planes) are still mmap'ed and returned at once, so
// the peak memory of large-tile jobs does not grow.
namespace flowd {

// Applies the settings above unless the user chose malloc settings of their
// own (GLIBC_TUNABLES with glibc.malloc.*, MALLOC_*_ variables). Call once,
// first thing in main(). Returns whether it changed anything.
bool tune_malloc_for_tiles() noexcept;

}  // namespace flowd
