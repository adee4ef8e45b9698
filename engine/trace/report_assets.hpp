#pragma once
// The HTML report's page as it is in engine/trace/report/, compiled in at
// build time (embed_assets.cmake writes report_assets.cpp into the build
// tree), so the report needs no files at run time and the page's style and
// script are kept, read and linted as CSS and JavaScript.
#include <string_view>

namespace flowd::trace::report_assets {

// report.html is the page with markers where html_report.cpp puts the style
// sheet, the run's data and the script. The script is two files run in one
// closure that report.html opens: report_base.js (the run's data, formatting
// helpers) and report.js (colours, header, charts, timeline).
std::string_view html() noexcept;
std::string_view css() noexcept;
std::string_view base_js() noexcept;
std::string_view js() noexcept;

}  // namespace flowd::trace::report_assets
