#pragma once
// The PRNU core in one include: camera identification from sensor noise
// (../../shared/papers/rocket.md, "PRNU" and "The wavelet residual ...").
#include "compare.hpp"
#include "fft.hpp"
#include "filters.hpp"
#include "fingerprint.hpp"
#include "geometry.hpp"
#include "image.hpp"
#include "wavelet.hpp"
