# Dumps the target's libc.so.6 and libstdc++.so.6 with binutils' readelf, then runs a table test
# (under the emulator for cross builds) that compares stackwalk's decoding with the dumps.
# Inputs: COMPILER READELF READELF_ARGS (';'-list) MATCH (a line every dump has) INPUTS_VAR
#         EMULATOR TEST WORK_DIR
file(MAKE_DIRECTORY ${WORK_DIR})
set(inputs "")
foreach(lib libc.so.6 libstdc++.so.6)
  execute_process(COMMAND ${COMPILER} -print-file-name=${lib} OUTPUT_VARIABLE path
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  get_filename_component(path ${path} REALPATH)
  if(NOT EXISTS ${path})
    message(FATAL_ERROR "${lib} of the target not found (${path})")
  endif()
  set(dump ${WORK_DIR}/${lib}.txt)
  execute_process(COMMAND ${READELF} ${READELF_ARGS} ${path} OUTPUT_FILE ${dump} RESULT_VARIABLE rc)
  # readelf exits 1 on libraries it has any complaint about, dump or not: judge the dump.
  file(STRINGS ${dump} matched REGEX "${MATCH}" LIMIT_COUNT 10)
  list(LENGTH matched found)
  if(found EQUAL 0)
    message(FATAL_ERROR "readelf printed nothing usable for ${path} (exit ${rc})")
  endif()
  list(APPEND inputs "${path}=${dump}")
endforeach()
execute_process(COMMAND ${CMAKE_COMMAND} -E env "${INPUTS_VAR}=${inputs}" ${EMULATOR} ${TEST}
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${TEST} failed")
endif()
