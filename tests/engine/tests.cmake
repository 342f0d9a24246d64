set_tests_properties(engine/test_engine PROPERTIES FIXTURES_REQUIRED random_models)

# The window pool (test_engine_window.c): models at real window layouts for its memory check, made once per build.
add_test(NAME setup_window_models
  COMMAND ${CMAKE_COMMAND} -DMKRANDMODEL=$<TARGET_FILE:mkrandmodel> -DOUT=${PROJECT_BINARY_DIR}/window-models
          -DDATA=${PROJECT_SOURCE_DIR}/tests/data -P ${PROJECT_SOURCE_DIR}/tests/tools/mk_window_models.cmake)
set_tests_properties(setup_window_models PROPERTIES FIXTURES_SETUP window_models LABELS engine)
set_tests_properties(engine/test_engine_window PROPERTIES FIXTURES_REQUIRED window_models
  ENVIRONMENT "${XPI_TEST_ENV};XPI_WINDOW_MODELS=${PROJECT_BINARY_DIR}/window-models")
if(TARGET ze_zesim)
  set(XPI_WINDOW_XPU_ENV "${XPI_TEST_ENV};ZE_ENABLE_ALT_DRIVERS=$<TARGET_FILE:ze_zesim>;ZESIM_DEVICES=0000:3a:00.0=256M,0000:1a:00.0=256M;POCL_CACHE_DIR=${PROJECT_BINARY_DIR}/pocl-cache;LSAN_OPTIONS=suppressions=${PROJECT_SOURCE_DIR}/tests/xpu/lsan.supp")
  add_test(NAME engine/test_engine_window_xpu COMMAND test_engine_window xpu:0)
  add_test(NAME engine/test_engine_window_xpu_map COMMAND test_engine_window auto auto)
  set_tests_properties(engine/test_engine_window_xpu engine/test_engine_window_xpu_map
    PROPERTIES LABELS "engine;xpu" TIMEOUT 900 ENVIRONMENT "${XPI_WINDOW_XPU_ENV}")
endif()
