# mkrandmodel --arch A at a tiny shape, then the CLI loads it (every checkpoint tensor must be read: an unread one
# would be warned about, which fails the test) and generates 4 greedy tokens.
# Run: cmake -DMKRANDMODEL=.. -DCLI=.. -DARCH=.. -DOUT=.. -DDATA=.. -P
set(dir ${OUT}/rand-${ARCH})
file(MAKE_DIRECTORY ${OUT})
execute_process(COMMAND ${CMAKE_COMMAND} -E env ASAN_OPTIONS=detect_leaks=0 ${MKRANDMODEL} ${dir} --arch ${ARCH}
                        --preset tiny RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "mkrandmodel --arch ${ARCH} failed")
endif()
file(COPY ${DATA}/tokenizers/qwen3/tokenizer.json ${DATA}/tokenizers/qwen3/tokenizer_config.json DESTINATION ${dir})
execute_process(COMMAND ${CLI} generate -m ${dir} -p "Hello" -n 4 --greedy --json -v
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "\"ids\": *\\[[0-9]+, *[0-9]+, *[0-9]+, *[0-9]+\\]" OR err MATCHES "never reads")
  message(FATAL_ERROR "${ARCH}: rc ${rc}\n${out}\n${err}")
endif()
message(STATUS "${ARCH}: ${out}")
