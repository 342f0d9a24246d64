# The request parser and response formatter of `xpuinfer serve` are compiled into their test and the replay of
# the fuzzing harness's corpus (the CLI is not a library), with the CLI files they call (chat template and
# tokenization helpers, option and buffer utilities): the list is XPI_SERVE_PARSER_SOURCES (CMakeLists.txt).
target_sources(test_serve_request PRIVATE ${XPI_SERVE_PARSER_SOURCES})
target_include_directories(test_serve_request PRIVATE ${PROJECT_SOURCE_DIR}/tools/xpuinfer/serve
                                                      ${PROJECT_SOURCE_DIR}/tools/xpuinfer)
# The server tests need the server (libmicrohttpd) and the openai client (scripts/setup.sh installs both).
if(NOT MHD_FOUND)
  set_tests_properties(serve/test_serve_openai.py serve/test_serve_http.py PROPERTIES DISABLED TRUE)
endif()
# The libFuzzer harness of the request parser (tests/fuzz/fuzz_serve_request.c), replayed over its seed corpus in
# every build (so the sanitizer run checks the seeds too); libFuzzer itself runs it in the fuzzing build
# (tests/fuzz/CMakeLists.txt).
add_executable(fuzz_serve_request_replay ${PROJECT_SOURCE_DIR}/tests/fuzz/fuzz_serve_request.c ${XPI_SERVE_PARSER_SOURCES})
target_compile_definitions(fuzz_serve_request_replay PRIVATE FUZZ_REPLAY_MAIN)
target_include_directories(fuzz_serve_request_replay PRIVATE ${PROJECT_SOURCE_DIR}/tools/xpuinfer/serve
                                                             ${PROJECT_SOURCE_DIR}/tools/xpuinfer)
target_link_libraries(fuzz_serve_request_replay PRIVATE xpuinfer_internal)
add_test(NAME serve/fuzz_serve_request_corpus COMMAND fuzz_serve_request_replay ${PROJECT_SOURCE_DIR}/tests/fuzz/corpus/serve_request)
set_tests_properties(serve/fuzz_serve_request_corpus PROPERTIES ENVIRONMENT "${XPI_TEST_ENV}" LABELS serve TIMEOUT 300)
