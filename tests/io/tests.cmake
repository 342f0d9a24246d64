# io tests read the random models made by the setup_random_models fixture.
set_tests_properties(io/test_safetensors io/test_config PROPERTIES FIXTURES_REQUIRED random_models)
