# latdoc_library(NAME SOURCES ... DEPS ...): one module's static library. Includes are rooted
# at src/, and a module links only what it lists: PRIVATE, so a library that uses a module must
# list it itself rather than reach it through another's links (scripts/check-layers.py checks
# the lists against the layers and against each source's includes).
function(latdoc_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(${name} PRIVATE ${ARG_DEPS})
endfunction()

# latdoc_test(NAME [SERIAL] SOURCES ... DEPS ...): one GoogleTest program, registered with
# ctest. Tests run with the repository root as working directory, so tests/data/... paths
# resolve. SERIAL: its tests measure time against ground truth and run alone (RUN_SERIAL), so a
# parallel ctest cannot steal their CPU (unless LATDOC_SERIAL_TESTS is off). The test's own code
# builds at -Og in optimised builds: it compiles in about 60% of the -O2 time, and the code
# under test keeps its flags.
function(latdoc_test name)
  cmake_parse_arguments(ARG "SERIAL" "" "SOURCES;DEPS" ${ARGN})
  set(serial FALSE)
  if(ARG_SERIAL AND LATDOC_SERIAL_TESTS)
    set(serial TRUE)
  endif()
  add_executable(${name} ${ARG_SOURCES})
  target_compile_options(${name} PRIVATE $<$<CONFIG:RelWithDebInfo,Release>:-Og>)
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gmock GTest::gtest GTest::gtest_main)
  target_compile_definitions(${name} PRIVATE
    LATDOC_SOURCE_DIR="${PROJECT_SOURCE_DIR}" LATDOC_BINARY="$<TARGET_FILE:latdoc>")
  gtest_discover_tests(${name} WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
    DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 300 RUN_SERIAL ${serial})
endfunction()
