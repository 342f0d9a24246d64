# Tokenizer tests: the differential test drives tok_driver (JSON lines in, JSON lines out) against HF tokenizers.
add_executable(tok_driver ${CMAKE_CURRENT_SOURCE_DIR}/tokenizer/tok_driver.c)
target_link_libraries(tok_driver PRIVATE xpuinfer_internal)
set_tests_properties(tokenizer/test_differential.py PROPERTIES TIMEOUT 300)
