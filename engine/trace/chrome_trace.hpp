#pragma once
// The Chrome trace event format (JSON), which Perfetto (ui.perfetto.dev) and
// chrome://tracing open: a thread per track, complete events for spans,
// counter events for counters.
#include <filesystem>

#include "trace/trace.hpp"

namespace flowd::trace {

Json chrome_trace(const RunTrace& t);
// Writes atomically; throws flowd::Error naming the file.
void write_chrome_trace(const RunTrace& t, const std::filesystem::path& file);

}  // namespace flowd::trace
