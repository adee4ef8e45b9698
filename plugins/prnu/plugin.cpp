// The PRNU plugin (docs/plugins/prnu.md): camera identification from the
// sensor's photo-response non-uniformity, Rocket's forensics application:
// residuals, fingerprints, all-pairs NCC/PCE, and ROC curves.
#include "flowd/plugin.hpp"

#include "ops/compare.hpp"
#include "ops/extract.hpp"
#include "ops/fingerprint.hpp"
#include "ops/roc.hpp"

FLOWD_PLUGIN("prnu", "0.1.0", "PRNU camera identification: residuals, fingerprints, all-pairs NCC and PCE",
             flowd::prnu::Extract, flowd::prnu::Fingerprint, flowd::prnu::Compare, flowd::prnu::RocSink)
