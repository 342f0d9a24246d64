set_tests_properties(model/test_goldens PROPERTIES FIXTURES_REQUIRED random_models)
set_tests_properties(model/test_goldens_big PROPERTIES FIXTURES_REQUIRED random_models LABELS "model;slow" TIMEOUT 1800)
