// The HTML report's inline assets, embedded into the binary at build time by
// src/report/assets/assets.cmake (generated sources; see embed_asset.cmake for the checks).
// Each function returns static text, valid for the program's lifetime. Thread-safe.
#pragma once

#include <string_view>

namespace latdoc::report::assets {

// Chart.js (MIT licence), minified UMD build from report-assets/node_modules (npm registry,
// version pinned in report-assets/package-lock.json). Defines window.Chart.
std::string_view ChartJs();
std::string_view ChartJsVersion();   // "v4.6.1"

// latdoc's own page script (draws the charts from the #latdoc-data block) and stylesheet.
std::string_view ReportJs();
std::string_view ReportCss();

}  // namespace latdoc::report::assets
