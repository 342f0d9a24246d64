# Runs one libFuzzer harness for ctest (xpi_add_fuzzer): MODE=corpus runs every file of CORPUS once;
# MODE=fuzz fuzzes for SECONDS starting from CORPUS, writing new inputs to WORK (never into the source tree).
file(GLOB_RECURSE files LIST_DIRECTORIES false "${CORPUS}/*")
get_filename_component(adir "${ARTIFACTS}" DIRECTORY)
file(MAKE_DIRECTORY "${adir}")
if(MODE STREQUAL "corpus")
  if(NOT files)
    message(FATAL_ERROR "${CORPUS}: no corpus files")
  endif()
  list(SORT files)
  execute_process(COMMAND "${FUZZER}" ${ARGS} -artifact_prefix=${ARTIFACTS} ${files} RESULT_VARIABLE rc)
else()
  file(MAKE_DIRECTORY "${WORK}")
  execute_process(COMMAND "${FUZZER}" ${ARGS} -max_total_time=${SECONDS} -print_final_stats=1
                          -artifact_prefix=${ARTIFACTS} "${WORK}" "${CORPUS}" RESULT_VARIABLE rc)
endif()
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${FUZZER} failed (${rc}); the crashing input is in ${ARTIFACTS}*")
endif()
