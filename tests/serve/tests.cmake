# The parser and formatter of `xpuinfer serve` are compiled into their test (the CLI is not a library).
target_sources(test_serve_request PRIVATE ${CMAKE_SOURCE_DIR}/tools/xpuinfer/serve/serve_request.c
                                          ${CMAKE_SOURCE_DIR}/tools/xpuinfer/serve/serve_format.c)
target_include_directories(test_serve_request PRIVATE ${CMAKE_SOURCE_DIR}/tools/xpuinfer/serve)
target_link_libraries(test_serve_request PRIVATE PkgConfig::CJSON)
# The server tests need the server (libmicrohttpd) and the openai client (scripts/setup.sh installs both).
if(NOT MHD_FOUND)
  set_tests_properties(serve/test_serve_openai.py serve/test_serve_http.py PROPERTIES DISABLED TRUE)
endif()
