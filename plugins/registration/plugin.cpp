// The registration plugin: rigid alignment of drifting image series
// (docs/plugins/registration.md): the pairwise map, the scan's combine and
// the sink.
#include "flowd/plugin.hpp"

#include "ops/compose.hpp"
#include "ops/pairwise.hpp"
#include "ops/write.hpp"

FLOWD_PLUGIN("registration", "0.1.0", "Rigid registration of drifting image series (electron microscopy)",
             flowd::registration::Pairwise, flowd::registration::Compose,
             flowd::registration::Write)
