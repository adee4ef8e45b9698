#pragma once
// FLOWD_PRNU_CLONES marks the hot loops of the core (window means, the db4
// filters, FastNoise): on x86-64 with GCC or Clang they are compiled twice,
// for AVX2 and for the baseline, and the loader picks one per machine
// (target_clones, an ifunc). Only the vector width differs: no FMA is
// enabled and the loops sum in a fixed order, so both give the same bits.
// Define FLOWD_PRNU_NO_CLONES to build the baseline only.
#if defined(__x86_64__) && defined(__has_attribute) && !defined(FLOWD_PRNU_NO_CLONES)
#if __has_attribute(target_clones)
#define FLOWD_PRNU_CLONES __attribute__((target_clones("avx2", "default")))
#endif
#endif
#ifndef FLOWD_PRNU_CLONES
#define FLOWD_PRNU_CLONES
#endif
