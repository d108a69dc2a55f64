# Dumps the target's libc.so.6 and libstdc++.so.6 with the host's readelf, then runs
# cfi_table_test (under the emulator for cross builds) against the dumps.
# Inputs: COMPILER EMULATOR TEST WORK_DIR
file(MAKE_DIRECTORY ${WORK_DIR})
set(inputs "")
foreach(lib libc.so.6 libstdc++.so.6)
  execute_process(COMMAND ${COMPILER} -print-file-name=${lib} OUTPUT_VARIABLE path
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  get_filename_component(path ${path} REALPATH)
  if(NOT EXISTS ${path})
    message(FATAL_ERROR "${lib} of the target not found (${path})")
  endif()
  execute_process(COMMAND readelf --debug-dump=frames-interp ${path}
                  OUTPUT_FILE ${WORK_DIR}/${lib}.frames RESULT_VARIABLE rc)
  # readelf exits 1 on libraries it has any complaint about, dump or not: judge the dump.
  file(STRINGS ${WORK_DIR}/${lib}.frames fdes REGEX " FDE cie=" LIMIT_COUNT 10)
  list(LENGTH fdes found)
  if(found EQUAL 0)
    message(FATAL_ERROR "readelf printed no FDE for ${path} (exit ${rc})")
  endif()
  list(APPEND inputs "${path}=${WORK_DIR}/${lib}.frames")
endforeach()
string(REPLACE ";" "\\;" inputs_env "${inputs}")
execute_process(COMMAND ${CMAKE_COMMAND} -E env "STACKWALK_CFI_TABLE_INPUTS=${inputs}"
                        ${EMULATOR} ${TEST} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cfi_table_test failed")
endif()
