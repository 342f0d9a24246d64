# Jinja engine tests: jj_driver renders templates for the differential Python tests (jinja2 from PyPI as the
# reference, configured as transformers' apply_chat_template).
add_executable(jj_driver ${CMAKE_CURRENT_SOURCE_DIR}/jinja/jj_driver.c)
target_link_libraries(jj_driver PRIVATE xpuinfer_internal)

# The libFuzzer harness of the engine (tests/fuzz/fuzz_jinja.c), replayed over its seed corpus in every build (so the
# sanitizer run checks the seeds too); libFuzzer itself runs it in the fuzzing build.
add_executable(fuzz_jinja_replay ${PROJECT_SOURCE_DIR}/tests/fuzz/fuzz_jinja.c)
target_compile_definitions(fuzz_jinja_replay PRIVATE FUZZ_REPLAY_MAIN)
target_link_libraries(fuzz_jinja_replay PRIVATE xpuinfer_internal)
add_test(NAME jinja/fuzz_jinja_corpus COMMAND fuzz_jinja_replay ${PROJECT_SOURCE_DIR}/tests/fuzz/corpus/jinja)
set_tests_properties(jinja/fuzz_jinja_corpus PROPERTIES ENVIRONMENT "${XPI_TEST_ENV}" LABELS jinja TIMEOUT 300)
