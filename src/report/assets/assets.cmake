# Embeds the HTML report's assets into C++ sources at build time (included from
# src/report/CMakeLists.txt). Chart.js comes from report-assets/node_modules, installed by
# report-assets/install.sh (npm ci); nothing is fetched here. When the file is missing, the
# build of latdoc_diagnosis_report stops with a message saying to run that script.
set(LATDOC_CHARTJS "${PROJECT_SOURCE_DIR}/report-assets/node_modules/chart.js/dist/chart.umd.min.js")
set(latdoc_assets_dir "${CMAKE_CURRENT_BINARY_DIR}/assets")
file(MAKE_DIRECTORY "${latdoc_assets_dir}")
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
             "${PROJECT_SOURCE_DIR}/report-assets/package-lock.json")

set(LATDOC_REPORT_ASSET_SOURCES "")
# latdoc_embed_asset(input output.cc function [version_function])
function(latdoc_embed_asset in out func)
  set(extra "")
  if(ARGC GREATER 3)
    set(extra "-DVERSION_FUNC=${ARGV3}")
  endif()
  # An input of report-assets/node_modules is not a dependency: were it one, a missing file would
  # stop ninja with "no known rule" instead of this script's message. package-lock.json stands
  # for it (a new version is a new lock file); sources of this folder are dependencies.
  set(deps "${CMAKE_CURRENT_SOURCE_DIR}/assets/embed_asset.cmake")
  if(in MATCHES "/node_modules/")
    list(APPEND deps "${PROJECT_SOURCE_DIR}/report-assets/package-lock.json")
  else()
    list(APPEND deps "${in}")
  endif()
  add_custom_command(
    OUTPUT "${latdoc_assets_dir}/${out}"
    COMMAND ${CMAKE_COMMAND} "-DIN=${in}" "-DOUT=${latdoc_assets_dir}/${out}" "-DFUNC=${func}"
            ${extra}
            "-DMISSING_HINT=Run report-assets/install.sh (npm ci; needs nodejs and npm) and build again."
            -P "${CMAKE_CURRENT_SOURCE_DIR}/assets/embed_asset.cmake"
    DEPENDS ${deps}
    COMMENT "Embedding ${out} into the HTML report"
    VERBATIM)
  set(LATDOC_REPORT_ASSET_SOURCES ${LATDOC_REPORT_ASSET_SOURCES} "${latdoc_assets_dir}/${out}"
      PARENT_SCOPE)
endfunction()

latdoc_embed_asset("${LATDOC_CHARTJS}" chart_js.cc ChartJs ChartJsVersion)
latdoc_embed_asset("${CMAKE_CURRENT_SOURCE_DIR}/assets/report.js" report_js.cc ReportJs)
latdoc_embed_asset("${CMAKE_CURRENT_SOURCE_DIR}/assets/report.css" report_css.cc ReportCss)
