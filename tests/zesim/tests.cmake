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
  # zesim's out-of-order mode: launches of lists without the in-order flag run in reverse between ordering points.
  add_test(NAME zesim/test_zesim_ooo COMMAND test_zesim)
  set_tests_properties(zesim/test_zesim_ooo PROPERTIES ENVIRONMENT "${ZESIM_ENV};ZESIM_OUT_OF_ORDER=1" LABELS zesim
                       TIMEOUT 900)
  # With the loader's intercept layer every handle is wrapped by the loader, as with several drivers.
  add_test(NAME zesim/test_zesim_intercept COMMAND test_zesim)
  set_tests_properties(zesim/test_zesim_intercept PROPERTIES
    ENVIRONMENT "${ZESIM_ENV};ZE_ENABLE_LOADER_INTERCEPT=1" LABELS zesim TIMEOUT 900)
endif()

# Intel's CPU OpenCL runtime as zesim's engine (opt-in: it is not a Debian package). Install it with
#   python3 -m venv /opt/iocl && /opt/iocl/bin/pip install intel-opencl-rt intel-cmplr-lib-rt
# and configure with -DXPI_INTEL_OPENCL_LIBDIR=/opt/iocl/lib: the conformance test then also runs on it,
# including a cl_intel_subgroups kernel that PoCL cannot run.
set(XPI_INTEL_OPENCL_LIBDIR "" CACHE PATH "lib folder of a pip-installed intel-opencl-rt (runs zesim tests on it)")
if(TARGET test_zesim AND XPI_INTEL_OPENCL_LIBDIR)
  set(ZESIM_INTEL_SPV ${CMAKE_CURRENT_BINARY_DIR}/zesim_intel.spv)
  add_custom_command(OUTPUT ${ZESIM_INTEL_SPV}
    COMMAND clang-15 -cl-std=CL2.0 -Xclang -cl-ext=+cl_intel_subgroups -cl-no-stdinc -Xclang -include -Xclang opencl-c.h
            -target spir64 -O2 -emit-llvm -c ${CMAKE_CURRENT_LIST_DIR}/zesim_intel.cl -o ${CMAKE_CURRENT_BINARY_DIR}/zesim_intel.bc
    COMMAND llvm-spirv-15 --spirv-ext=+SPV_INTEL_subgroups ${CMAKE_CURRENT_BINARY_DIR}/zesim_intel.bc -o ${ZESIM_INTEL_SPV}
    COMMAND spirv-val ${ZESIM_INTEL_SPV}
    DEPENDS ${CMAKE_CURRENT_LIST_DIR}/zesim_intel.cl
    COMMENT "SPIR-V with cl_intel_subgroups for the zesim conformance test")
  add_custom_target(zesim_test_intel_spv DEPENDS ${ZESIM_INTEL_SPV})
  add_dependencies(test_zesim zesim_test_intel_spv)
  add_test(NAME zesim/test_zesim_intel COMMAND test_zesim)
  set_tests_properties(zesim/test_zesim_intel PROPERTIES LABELS zesim TIMEOUT 900 ENVIRONMENT
    "${ZESIM_ENV};ZESIM_OPENCL_ENGINE=intel;ZESIM_TEST_INTEL_SPV=${ZESIM_INTEL_SPV};OCL_ICD_FILENAMES=${XPI_INTEL_OPENCL_LIBDIR}/libintelocl.so;LD_LIBRARY_PATH=${XPI_INTEL_OPENCL_LIBDIR}")
endif()
