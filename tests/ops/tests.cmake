# The op-case list (op_cases.c) on every CPU kernel table: ops/test_backend_ops runs the auto table (each kernel
# from the table measured best on this CPU), the entries below force one whole table each (XPI_CPU_ISA); a table
# this CPU lacks is skipped (77) with the reason. The XPU tiers run the same list from tests/xpu and tests/xpu_intel.
target_sources(test_backend_ops PRIVATE ${CMAKE_CURRENT_LIST_DIR}/op_cases.c)
if(XPUINFER_XPU)
  target_compile_definitions(test_backend_ops PRIVATE XPI_TEST_HAVE_XPU=1)
  target_link_libraries(test_backend_ops PRIVATE xpi_kernels_test) # the DPAS kernels with emulated builtins
endif()
set_tests_properties(ops/test_backend_ops PROPERTIES SKIP_RETURN_CODE 77)
foreach(isa scalar avx2 avxvnni avx512 amx)
  add_test(NAME ops/test_backend_ops_${isa} COMMAND test_backend_ops cpu:${isa})
  set_tests_properties(ops/test_backend_ops_${isa} PROPERTIES ENVIRONMENT "${XPI_TEST_ENV}" LABELS ops TIMEOUT 900
                       SKIP_RETURN_CODE 77)
endforeach()
