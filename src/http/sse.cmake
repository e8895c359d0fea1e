# latdoc_sse: the incremental Server-Sent Events decoder (no sockets, no Beast), so modules and
# benchmarks can use it without the HTTP client. Included from src/http/CMakeLists.txt.
latdoc_library(latdoc_sse
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/sse_decoder.cc
  DEPS latdoc_base)

latdoc_test(sse_decoder_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/sse_decoder_test.cc
  DEPS latdoc_sse)
