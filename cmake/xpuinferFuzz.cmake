# libFuzzer harnesses (tests/fuzz). Configure a separate build with clang and this option:
#   CC=clang-15 cmake -S . -B build-fuzz -DXPUINFER_FUZZ=ON -DXPUINFER_XPU=OFF -DXPUINFER_BUILD_TESTS=OFF
# The library is instrumented for coverage and built with ASan + UBSan; every harness links libFuzzer.
if(NOT CMAKE_C_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "XPUINFER_FUZZ needs clang (libFuzzer): configure with CC=clang-15 (Debian clang-15; "
                      "libclang-common-15-dev ships libFuzzer)")
endif()
set(XPI_FUZZ_FLAGS -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
add_compile_options(${XPI_FUZZ_FLAGS})
add_link_options(-fsanitize=address,undefined)

set(XPI_FUZZ_SECONDS 25 CACHE STRING "How long each fuzzer runs in its ctest (fuzz/<name>)")
set(XPI_FUZZ_CORPUS_WORKDIR "${PROJECT_BINARY_DIR}/fuzz-corpus")

# xpi_add_fuzzer(NAME SOURCES a.c [b.c ...] CORPUS_DIR dir [DICT file] [ARGS -max_len=N ...])
# Builds NAME (LLVMFuzzerTestOneInput in SOURCES, linked with libxpuinfer's internals) and adds two ctests:
#   fuzz/NAME_corpus  runs every file of CORPUS_DIR (the committed seeds and regressions) once
#   fuzz/NAME         fuzzes for XPI_FUZZ_SECONDS from CORPUS_DIR (new inputs go to the build folder)
# A crash, leak, sanitizer report or timeout fails the test; the input is left in the build folder
# (fuzz-artifacts/NAME-crash-...), to be committed into CORPUS_DIR with the fix.
function(xpi_add_fuzzer name)
  cmake_parse_arguments(F "" "CORPUS_DIR;DICT" "SOURCES;ARGS" ${ARGN})
  if(NOT F_SOURCES OR NOT F_CORPUS_DIR)
    message(FATAL_ERROR "xpi_add_fuzzer(${name}): SOURCES and CORPUS_DIR are required")
  endif()
  get_filename_component(corpus "${F_CORPUS_DIR}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  add_executable(${name} ${F_SOURCES})
  target_link_libraries(${name} PRIVATE xpuinfer_internal)
  target_link_options(${name} PRIVATE -fsanitize=fuzzer)
  set(args -rss_limit_mb=2048 -timeout=20 ${F_ARGS})
  if(F_DICT)
    get_filename_component(dict "${F_DICT}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    list(APPEND args -dict=${dict})
  endif()
  set(common -DFUZZER=$<TARGET_FILE:${name}> -DCORPUS=${corpus} "-DARGS=${args}"
             -DWORK=${XPI_FUZZ_CORPUS_WORKDIR}/${name} -DARTIFACTS=${PROJECT_BINARY_DIR}/fuzz-artifacts/${name}-)
  add_test(NAME fuzz/${name}_corpus COMMAND ${CMAKE_COMMAND} ${common} -DMODE=corpus -P "${PROJECT_SOURCE_DIR}/cmake/xpuinferFuzzRun.cmake")
  add_test(NAME fuzz/${name} COMMAND ${CMAKE_COMMAND} ${common} -DMODE=fuzz -DSECONDS=${XPI_FUZZ_SECONDS}
                                     -P "${PROJECT_SOURCE_DIR}/cmake/xpuinferFuzzRun.cmake")
  set(env "ASAN_OPTIONS=detect_leaks=1:abort_on_error=0" "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1")
  set_tests_properties(fuzz/${name}_corpus fuzz/${name} PROPERTIES LABELS fuzz ENVIRONMENT "${env}")
  math(EXPR timeout "${XPI_FUZZ_SECONDS} + 240")
  set_tests_properties(fuzz/${name} PROPERTIES TIMEOUT ${timeout} DEPENDS fuzz/${name}_corpus)
  set_property(GLOBAL APPEND PROPERTY XPI_FUZZERS ${name})
endfunction()
