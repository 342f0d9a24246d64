# The parser and formatter of `xpuinfer serve` are compiled into their test (the CLI is not a library).
target_sources(test_serve_request PRIVATE ${CMAKE_SOURCE_DIR}/tools/xpuinfer/serve/serve_request.c
                                          ${CMAKE_SOURCE_DIR}/tools/xpuinfer/serve/serve_format.c)
target_include_directories(test_serve_request PRIVATE ${CMAKE_SOURCE_DIR}/tools/xpuinfer/serve)
target_link_libraries(test_serve_request PRIVATE PkgConfig::XPI_CJSON)
# The server tests need the server (libmicrohttpd) and the openai client (scripts/setup.sh installs both).
if(NOT MHD_FOUND)
  set_tests_properties(serve/test_serve_openai.py serve/test_serve_http.py PROPERTIES DISABLED TRUE)
endif()
# The libFuzzer harness of the request parser (tests/fuzz/fuzz_serve_request.c), replayed over its seed corpus in
# every build (so the sanitizer run checks the seeds too).
add_executable(fuzz_serve_request_replay ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_serve_request.c
               ${CMAKE_SOURCE_DIR}/tools/xpuinfer/serve/serve_request.c ${CMAKE_SOURCE_DIR}/tools/xpuinfer/serve/serve_format.c)
target_compile_definitions(fuzz_serve_request_replay PRIVATE FUZZ_REPLAY_MAIN)
target_include_directories(fuzz_serve_request_replay PRIVATE ${CMAKE_SOURCE_DIR}/tools/xpuinfer/serve)
target_link_libraries(fuzz_serve_request_replay PRIVATE xpuinfer_internal PkgConfig::XPI_CJSON)
add_test(NAME serve/fuzz_serve_request_corpus COMMAND fuzz_serve_request_replay ${CMAKE_SOURCE_DIR}/tests/fuzz/corpus/serve_request)
set_tests_properties(serve/fuzz_serve_request_corpus PROPERTIES ENVIRONMENT "${XPI_TEST_ENV}" LABELS serve TIMEOUT 300)
