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
set_tests_properties(model/test_generate_batch_cli.py PROPERTIES FIXTURES_REQUIRED random_models)
# examples/batch.c: three prompts through one engine, printed in order (the first's golden continuation)
add_test(NAME model/example_batch
  COMMAND example_batch ${PROJECT_SOURCE_DIR}/examples/models/tinyfortunes "A computer" "Love is" "The best way")
set_tests_properties(model/example_batch PROPERTIES LABELS model ENVIRONMENT "${XPI_TEST_ENV}"
  PASS_REGULAR_EXPRESSION "A computer is like a raisin, not a stain you can\\.\nLove is")
