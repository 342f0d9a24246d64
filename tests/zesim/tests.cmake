# zesim tests run through the stock Level Zero loader with zesim as its only driver.
set(ZESIM_SPV ${CMAKE_CURRENT_BINARY_DIR}/zesim_kernels.spv)
add_custom_command(OUTPUT ${ZESIM_SPV}
  COMMAND clang-15 -cl-std=CL1.2 -target spir64 -O2 -emit-llvm -c ${CMAKE_CURRENT_LIST_DIR}/zesim_kernels.cl
          -o ${CMAKE_CURRENT_BINARY_DIR}/zesim_kernels.bc
  COMMAND llvm-spirv-15 ${CMAKE_CURRENT_BINARY_DIR}/zesim_kernels.bc -o ${ZESIM_SPV}
  COMMAND spirv-val ${ZESIM_SPV}
  DEPENDS ${CMAKE_CURRENT_LIST_DIR}/zesim_kernels.cl
  COMMENT "SPIR-V for the zesim conformance test")
add_custom_target(zesim_test_spv DEPENDS ${ZESIM_SPV})

find_library(XPI_ZE_LOADER_LIB ze_loader)
if(TARGET test_zesim)
  add_dependencies(test_zesim zesim_test_spv ze_zesim)
  # The conformance test calls Level Zero directly (the library itself only dlopens the loader).
  target_link_libraries(test_zesim PRIVATE ${XPI_ZE_LOADER_LIB})
  set(ZESIM_ENV "${XPI_TEST_ENV}" "ZE_ENABLE_ALT_DRIVERS=$<TARGET_FILE:ze_zesim>" "ZESIM_TEST_SPV=${ZESIM_SPV}"
      "ZESIM_DEVICES=0000:3a:00.0=64M")
  set_tests_properties(zesim/test_zesim PROPERTIES ENVIRONMENT "${ZESIM_ENV}")
  if(EXISTS /usr/lib/x86_64-linux-gnu/libze_validation_layer.so.1 OR EXISTS /usr/lib/libze_validation_layer.so.1)
    add_test(NAME zesim/test_zesim_validation COMMAND test_zesim)
    set_tests_properties(zesim/test_zesim_validation PROPERTIES
      ENVIRONMENT "${ZESIM_ENV};ZE_ENABLE_VALIDATION_LAYER=1;ZE_ENABLE_PARAMETER_VALIDATION=1" LABELS zesim TIMEOUT 900)
  endif()
endif()
if(TARGET test_zesim)
  # With the loader's intercept layer every handle is wrapped by the loader, as with several drivers.
  add_test(NAME zesim/test_zesim_intercept COMMAND test_zesim)
  set_tests_properties(zesim/test_zesim_intercept PROPERTIES
    ENVIRONMENT "${ZESIM_ENV};ZE_ENABLE_LOADER_INTERCEPT=1" LABELS zesim TIMEOUT 900)
endif()
