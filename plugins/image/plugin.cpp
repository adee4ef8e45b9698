// The image plugin: general-purpose image operators on flowd arrays.
#include "gaussian.hpp"
#include "grey.hpp"
#include "histogram.hpp"
#include "label.hpp"
#include "region_stats.hpp"
#include "subsample.hpp"
#include "sum.hpp"
#include "threshold.hpp"

FLOWD_PLUGIN("image", "0.1.0", "General image operators: grey, blur, threshold, labelling, region statistics, histograms, subsampling",
             flowd::image::Grey, flowd::image::Gaussian, flowd::image::Threshold, flowd::image::Label,
             flowd::image::RegionStats, flowd::image::Histogram, flowd::image::Sum, flowd::image::Subsample)
