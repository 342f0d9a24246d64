# Jinja engine tests: jj_driver renders templates for the differential Python tests (jinja2 from PyPI as the
# reference, configured as transformers' apply_chat_template).
add_executable(jj_driver ${CMAKE_CURRENT_SOURCE_DIR}/jinja/jj_driver.c)
target_link_libraries(jj_driver PRIVATE xpuinfer_static)
