# libxpuinfer as packagers and applications consume it (consumers.sh): install to a scratch prefix, then
# pkg-config (shared and static), find_package, add_subdirectory (CPU-only), the .deb, symbols and the version.
# Not in sanitizer builds: they test packaging, and an ASan library needs its runtime in every consumer.
if(NOT XPUINFER_SANITIZE AND XPUINFER_INSTALL)
  set(xpi_consumer_env "XPI_SOURCE_DIR=${PROJECT_SOURCE_DIR}" "XPI_BUILD_DIR=${PROJECT_BINARY_DIR}"
      "XPI_VERSION=${PROJECT_VERSION}" "CMAKE_COMMAND=${CMAKE_COMMAND}" "CPACK_COMMAND=${CMAKE_CPACK_COMMAND}"
      "CC=${CMAKE_C_COMPILER}")
  foreach(step install symbols pkgconfig static find_package subdirectory deb version)
    add_test(NAME consumers/${step} COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/consumers.sh ${step})
    set_tests_properties(consumers/${step} PROPERTIES ENVIRONMENT "${xpi_consumer_env}" LABELS consumers TIMEOUT 600
                         RESOURCE_LOCK xpi_consumers)
    if(step STREQUAL "install")
      set_tests_properties(consumers/${step} PROPERTIES FIXTURES_SETUP xpi_installed)
    else()
      set_tests_properties(consumers/${step} PROPERTIES FIXTURES_REQUIRED xpi_installed)
    endif()
  endforeach()
  set_tests_properties(consumers/version PROPERTIES DEPENDS consumers/deb)
  # The subproject build compiles the library again: let it use the cores alone.
  set_tests_properties(consumers/subdirectory PROPERTIES RUN_SERIAL ON)
endif()
