# Discovery through the stock loader and zesim (tools/zesim).
set(XPI_ZESIM_ENV "XPI_ZESIM=$<TARGET_FILE:ze_zesim>" "XPI_ZESIM_B=$<TARGET_FILE:ze_zesim_b>")
if(TARGET test_device_list)
  add_dependencies(test_device_list ze_zesim)
  set_tests_properties(runtime/test_device_list PROPERTIES ENVIRONMENT
    "${XPI_TEST_ENV};ZE_ENABLE_ALT_DRIVERS=$<TARGET_FILE:ze_zesim>;ZESIM_DEVICES=0000:3a:00.0,0000:1a:00.0,0000:9a:00.0;ZE_AFFINITY_MASK=0,2;ZESIM_DPAS=1;XPI_EXPECT_XPUS=0000:1a:00.0,0000:9a:00.0")
  # No driver: the loader finds no GPU driver, so XPU is unavailable and the CPU is the only device.
  add_test(NAME runtime/test_device_list_nodriver COMMAND test_device_list)
  set_tests_properties(runtime/test_device_list_nodriver PROPERTIES LABELS runtime TIMEOUT 300 ENVIRONMENT
    "${XPI_TEST_ENV}" ENVIRONMENT_MODIFICATION "ZE_ENABLE_ALT_DRIVERS=unset:;ZE_AFFINITY_MASK=unset:")
endif()
set_tests_properties(runtime/test_devices.py PROPERTIES ENVIRONMENT "${XPI_TEST_ENV};${XPI_ZESIM_ENV}")
if(TARGET test_ze_memory)
  add_dependencies(test_ze_memory ze_zesim)
  set_tests_properties(runtime/test_ze_memory PROPERTIES ENVIRONMENT
    "${XPI_TEST_ENV};ZE_ENABLE_ALT_DRIVERS=$<TARGET_FILE:ze_zesim>;ZESIM_DEVICES=0000:3a:00.0=64M")
endif()
if(TARGET test_ze_memory)
  # Two drivers: the loader wraps handles; a failed module build must still report cleanly (no build log).
  add_test(NAME runtime/test_ze_memory_two_drivers COMMAND test_ze_memory)
  set_tests_properties(runtime/test_ze_memory_two_drivers PROPERTIES LABELS runtime TIMEOUT 300 ENVIRONMENT
    "${XPI_TEST_ENV};ZE_ENABLE_ALT_DRIVERS=$<TARGET_FILE:ze_zesim>,$<TARGET_FILE:ze_zesim_b>;ZESIM_DEVICES=0000:3a:00.0=64M;ZESIM_B_DEVICES=0000:4a:00.0=64M;XPI_TWO_DRIVERS=1")
endif()
