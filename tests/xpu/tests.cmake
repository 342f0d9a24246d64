# XPU tests run through Debian's Level Zero loader on the software device (tools/zesim, target ze_zesim):
# ZE_ENABLE_ALT_DRIVERS points the stock loader at it, ZESIM_DEVICES lists the software devices' PCI BDFs,
# POCL_CACHE_DIR keeps PoCL's compiled kernels between runs (the first build of a module takes ~1 s).
# ZESIM_OUT_OF_ORDER=1: zesim runs the launches of a list without the in-order flag out of order (reversed between
# ordering points), so an op order that the backend does not enforce fails here. The backend's lists are in order
# (Level Zero 1.7, which zesim reports); xpu/test_xpu_ops_barriers runs the ops against an API 1.4 driver
# (ZESIM_IN_ORDER=0), where the backend falls back to a barrier after each launch.
add_test(NAME xpu/test_xpu_ops_barriers COMMAND test_xpu_ops)
set_tests_properties(xpu/test_xpu_ops_barriers PROPERTIES ENVIRONMENT "${XPI_TEST_ENV};ZESIM_IN_ORDER=0" LABELS xpu
                     TIMEOUT 900)
set(XPI_XPU_TESTS xpu/test_xpu_ops xpu/test_xpu_ops_barriers xpu/test_xpu_fit xpu/test_xpu_tinyfortunes xpu/test_xpu_tokread
                   xpu/test_xpu_launches
                   xpu/test_xpu_numeric xpu/test_xpu_engine xpu/test_xpu_large_alloc xpu/test_xpu_moe
                   xpu/test_xpu_moe_model)
if(EXISTS ${CMAKE_CURRENT_LIST_DIR}/test_xpu_model.c)
  # its six model runs as two entries of three (XPI_XPU_MODEL_PART), run in parallel
  add_test(NAME xpu/test_xpu_model_2 COMMAND test_xpu_model)
  set_tests_properties(xpu/test_xpu_model_2 PROPERTIES ENVIRONMENT "${XPI_TEST_ENV}" TIMEOUT 900)
  list(APPEND XPI_XPU_TESTS xpu/test_xpu_model xpu/test_xpu_model_2)
endif()
# The op-case list (tests/ops/op_cases.c) on the portable tier (PoCL cannot build the Intel-tuned one)
add_test(NAME xpu/test_backend_ops_portable COMMAND test_backend_ops xpu:portable)
set_tests_properties(xpu/test_backend_ops_portable PROPERTIES ENVIRONMENT "${XPI_TEST_ENV}" LABELS xpu TIMEOUT 900)
list(APPEND XPI_XPU_TESTS xpu/test_backend_ops_portable)
# The memory plan on the 0.6B shape: bf16 over two 800 MB devices (the test's default mode), q4 on one of 700 MB;
# the performance model: tinyfortunes (default mode) and the 0.6B shape at 4K context (a 4 GiB device).
add_test(NAME xpu/test_xpu_memplan_q4 COMMAND test_xpu_memplan q4-one)
add_test(NAME xpu/test_xpu_perf_06b COMMAND test_xpu_perf 0.6b)
add_test(NAME xpu/test_xpu_perf_moe COMMAND test_xpu_perf moe) # the q8/q4 expert kernels' cost table entries
set_tests_properties(xpu/test_xpu_perf_moe PROPERTIES ENVIRONMENT "${XPI_TEST_ENV}" LABELS xpu TIMEOUT 900)
set_tests_properties(xpu/test_xpu_memplan_q4 xpu/test_xpu_perf_06b PROPERTIES ENVIRONMENT "${XPI_TEST_ENV}" TIMEOUT 900)
list(APPEND XPI_XPU_TESTS xpu/test_xpu_perf xpu/test_xpu_perf_06b xpu/test_xpu_perf_moe xpu/test_xpu_host_embed
                          xpu/test_xpu_memplan xpu/test_xpu_memplan_q4)
# q8/q4 weights: the matmul against the CPU's, and models against the CPU with the same --quant; the
# mixture-of-experts golden models (q8/q4 experts) as a test of their own
add_test(NAME xpu/test_xpu_quant_moe_model COMMAND test_xpu_quant_model moe)
set_tests_properties(xpu/test_xpu_quant_moe_model PROPERTIES ENVIRONMENT "${XPI_TEST_ENV}" LABELS xpu TIMEOUT 900)
# test_xpu_quant_model's models as three entries (tinyfortunes; two random golden models each), so that none runs
# near its timeout on a slow machine: on a loaded 2-core VM the four random models took 726 s in one entry
add_test(NAME xpu/test_xpu_quant_model_random1 COMMAND test_xpu_quant_model)
add_test(NAME xpu/test_xpu_quant_model_random2 COMMAND test_xpu_quant_model)
set_tests_properties(xpu/test_xpu_quant_model_random1 xpu/test_xpu_quant_model_random2 PROPERTIES
                     ENVIRONMENT "${XPI_TEST_ENV}" LABELS xpu TIMEOUT 900)
list(APPEND XPI_XPU_TESTS xpu/test_xpu_quant xpu/test_xpu_quant_model xpu/test_xpu_quant_model_random1
     xpu/test_xpu_quant_model_random2 xpu/test_xpu_quant_moe_model)
# Submission: a replayed decode step is one submission, no copy, one host wait, 4 bytes read
# (zesim counts the calls); weights go up on zesim's copy engine, and with ZESIM_COPY_ENGINE=0 (no copy-only
# queue group) on the compute group, giving the same logits bit for bit (the first run writes them, the second
# compares). Both in the out-of-order mode, where zesim's copy engine runs its commands only at the next host
# wait, so a kernel reading weights before their upload completed fails the test.
set(XPI_SUBMISSION_LOGITS ${CMAKE_CURRENT_BINARY_DIR}/xpu_submission_logits.bin)
set_tests_properties(xpu/test_xpu_submission PROPERTIES FIXTURES_SETUP xpu_submission_logits)
set_property(TEST xpu/test_xpu_submission APPEND PROPERTY ENVIRONMENT "XPI_SUBMISSION_LOGITS=${XPI_SUBMISSION_LOGITS}")
add_test(NAME xpu/test_xpu_submission_nocopy COMMAND test_xpu_submission nocopy ${XPI_SUBMISSION_LOGITS})
set_tests_properties(xpu/test_xpu_submission_nocopy PROPERTIES ENVIRONMENT "${XPI_TEST_ENV};ZESIM_COPY_ENGINE=0"
                     FIXTURES_REQUIRED xpu_submission_logits LABELS xpu TIMEOUT 900)
# and against an API 1.4 driver (no in-order lists: a barrier after each launch), the same counts
add_test(NAME xpu/test_xpu_submission_barriers COMMAND test_xpu_submission copy "")
set_tests_properties(xpu/test_xpu_submission_barriers PROPERTIES ENVIRONMENT "${XPI_TEST_ENV};ZESIM_IN_ORDER=0"
                     LABELS xpu TIMEOUT 900)
list(APPEND XPI_XPU_TESTS xpu/test_xpu_submission xpu/test_xpu_submission_nocopy xpu/test_xpu_submission_barriers)
foreach(t ${XPI_XPU_TESTS})
  set(devices "0000:3a:00.0=512M,0000:1a:00.0=512M,0000:9a:00.0=512M")
  if(t STREQUAL "xpu/test_xpu_fit")
    set(devices "0000:1a:00.0=4M,0000:3a:00.0=64M") # xpu:0 (first by bus and by order) smaller than tinyfortunes' weights
  elseif(t STREQUAL "xpu/test_xpu_large_alloc")
    set(devices "0000:1a:00.0=64M/maxalloc=1M,0000:3a:00.0=64M") # xpu:0's limit below tinyfortunes' 2 MiB embedding
  elseif(t STREQUAL "xpu/test_xpu_perf_06b")
    set(devices "0000:1a:00.0=4G")
  elseif(t STREQUAL "xpu/test_xpu_memplan")
    set(devices "0000:1a:00.0=800M,0000:3a:00.0=800M")
  elseif(t STREQUAL "xpu/test_xpu_memplan_q4")
    set(devices "0000:1a:00.0=700M")
  elseif(t MATCHES "^xpu/test_xpu_quant_(model|model_random1|model_random2|moe_model)$")
    set(devices "0000:3a:00.0=512M,0000:1a:00.0=512M") # --device-map auto over two devices
  endif()
  if(TARGET ze_zesim)
    set_property(TEST ${t} APPEND PROPERTY ENVIRONMENT
      "ZE_ENABLE_ALT_DRIVERS=$<TARGET_FILE:ze_zesim>"
      "ZESIM_DEVICES=${devices}" "ZESIM_OUT_OF_ORDER=1"
      "POCL_CACHE_DIR=${PROJECT_BINARY_DIR}/pocl-cache"
      "LSAN_OPTIONS=suppressions=${CMAKE_CURRENT_LIST_DIR}/lsan.supp")
  else()
    set_property(TEST ${t} APPEND PROPERTY ENVIRONMENT
      "XPI_XPU_TEST_SKIP=the software Level Zero device (tools/zesim, target ze_zesim) is not in this tree")
  endif()
  set_tests_properties(${t} PROPERTIES SKIP_RETURN_CODE 77)
endforeach()
if(TARGET xpu/test_xpu_model OR EXISTS ${CMAKE_CURRENT_LIST_DIR}/test_xpu_model.c)
  set_tests_properties(xpu/test_xpu_model xpu/test_xpu_model_2 PROPERTIES FIXTURES_REQUIRED random_models LABELS "xpu;slow")
  set_property(TEST xpu/test_xpu_model APPEND PROPERTY ENVIRONMENT "XPI_XPU_MODEL_PART=1")
  set_property(TEST xpu/test_xpu_model_2 APPEND PROPERTY ENVIRONMENT "XPI_XPU_MODEL_PART=2")
endif()
# the 0.6B model (1.19 GB) comes from the random-model fixture; minutes on zesim
set_tests_properties(xpu/test_xpu_memplan xpu/test_xpu_memplan_q4 xpu/test_xpu_perf_06b
                     PROPERTIES FIXTURES_REQUIRED random_models LABELS "xpu;slow")
# The CPU reference of test_xpu_quant_model runs its AVX2 kernels: on an AMX CPU the default AMX int8 prefill
# GEMM gives other logits than the CPU's own scalar, AVX2 and AVX-512 paths on tinyfortunes --quant q8 (0.2 from
# the third position of 'The meaning of life is', measured 2026-12-01; those three and the XPU agree within 6e-6),
# a CPU-side discrepancy, not a property of the XPU path.
set_tests_properties(xpu/test_xpu_quant_model xpu/test_xpu_quant_model_random1 xpu/test_xpu_quant_model_random2
                     PROPERTIES LABELS "xpu;slow")
set_tests_properties(xpu/test_xpu_quant_model_random1 xpu/test_xpu_quant_model_random2 PROPERTIES
                     FIXTURES_REQUIRED random_models)
set_property(TEST xpu/test_xpu_quant_model xpu/test_xpu_quant_model_random1 xpu/test_xpu_quant_model_random2
             xpu/test_xpu_quant_moe_model APPEND PROPERTY ENVIRONMENT "XPI_CPU_ISA=avx2")
set_property(TEST xpu/test_xpu_quant_model APPEND PROPERTY ENVIRONMENT "XPI_QUANT_MODEL_SET=tinyfortunes")
set_property(TEST xpu/test_xpu_quant_model_random1 APPEND PROPERTY ENVIRONMENT
             "XPI_QUANT_MODEL_SET=tiny-qwen3-f32,tiny-qwen2-f16")
set_property(TEST xpu/test_xpu_quant_model_random2 APPEND PROPERTY ENVIRONMENT
             "XPI_QUANT_MODEL_SET=tiny-qwen3-bf16,tiny-llama-bf16")
# The plan counts the window pool (test_xpu_window_plan.c): gemma3-w1024 of tests/engine's window models on a device
# just large enough for one sequence of 4096 positions with its sliding layers in a window pool of 50 blocks
# (the backend's own split counters and split-K partial sums, ~280 KiB, included).
set_tests_properties(xpu/test_xpu_window_plan PROPERTIES FIXTURES_REQUIRED window_models
  ENVIRONMENT "${XPI_TEST_ENV};XPI_WINDOW_MODELS=${PROJECT_BINARY_DIR}/window-models")
if(TARGET ze_zesim)
  set_property(TEST xpu/test_xpu_window_plan APPEND PROPERTY ENVIRONMENT "ZE_ENABLE_ALT_DRIVERS=$<TARGET_FILE:ze_zesim>"
    "ZESIM_DEVICES=0000:1a:00.0=34300K" "POCL_CACHE_DIR=${PROJECT_BINARY_DIR}/pocl-cache"
    "LSAN_OPTIONS=suppressions=${CMAKE_CURRENT_LIST_DIR}/lsan.supp")
else()
  set_property(TEST xpu/test_xpu_window_plan APPEND PROPERTY ENVIRONMENT
    "XPI_XPU_TEST_SKIP=the software Level Zero device (tools/zesim, target ze_zesim) is not in this tree")
endif()
set_tests_properties(xpu/test_xpu_window_plan PROPERTIES SKIP_RETURN_CODE 77 LABELS xpu)
