# Random models at real sliding-window layouts for test_engine_window's memory check at 32k positions (tiny
# widths: only the layer layout and the window matter): gemma3-w1024, Gemma 3's 5 of 6 layers sliding with a
# window of 1024 (its 4B+ models), and mistral-w4096, every layer sliding over 4096 (Mistral 7B v0.1).
# Run: cmake -DMKRANDMODEL=.. -DOUT=.. -DDATA=.. -P
foreach(spec "gemma3-w1024,gemma3_text,6,1024" "mistral-w4096,mistral,2,4096")
  string(REPLACE "," ";" spec "${spec}")
  list(GET spec 0 name)
  list(GET spec 1 arch)
  list(GET spec 2 layers)
  list(GET spec 3 window)
  set(dir ${OUT}/${name})
  file(MAKE_DIRECTORY ${dir})
  execute_process(COMMAND ${CMAKE_COMMAND} -E env ASAN_OPTIONS=detect_leaks=0 ${MKRANDMODEL} ${dir} --arch ${arch}
                          --preset tiny --layers ${layers} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "mkrandmodel --arch ${arch} failed")
  endif()
  file(READ ${dir}/config.json cfg)
  string(REPLACE "\"sliding_window\": 4096" "\"sliding_window\": ${window}" cfg "${cfg}")
  if(NOT cfg MATCHES "\"sliding_window\": ${window}")
    message(FATAL_ERROR "${name}: no sliding_window in the config")
  endif()
  file(WRITE ${dir}/config.json "${cfg}")
  file(COPY ${DATA}/tokenizers/qwen3/tokenizer.json ${DATA}/tokenizers/qwen3/tokenizer_config.json DESTINATION ${dir})
endforeach()
