// The registration plugin: rigid alignment of drifting image series
// (docs/plugins/registration.md). The scan's combine, registration.compose,
// is compose_items (ops/operand.hpp); it becomes an operator with the scan
// pattern.
#include "flowd/plugin.hpp"

#include "ops/pairwise.hpp"
#include "ops/write.hpp"

FLOWD_PLUGIN("registration", "0.1.0", "Rigid registration of drifting image series (electron microscopy)",
             flowd::registration::Pairwise, flowd::registration::Write)
