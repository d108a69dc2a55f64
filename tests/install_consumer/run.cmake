# Installs the build tree into a scratch prefix, then builds and runs consumers against it with
# find_package (shared and static) and with pkg-config. Cross builds run them under the emulator.
# Inputs: SOURCE_DIR BUILD_DIR WORK_DIR TOOLCHAIN_FILE C_COMPILER EMULATOR
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  message(STATUS "${out}")
  set(LAST_OUTPUT "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
foreach(f include/stackwalk/stackwalk.h include/stackwalk/capture.h include/stackwalk/cursor.h
          lib/libstackwalk.a lib/libstackwalk.so lib/pkgconfig/stackwalk.pc
          lib/cmake/stackwalk/stackwalkConfig.cmake)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "not installed: ${f}")
  endif()
endforeach()

set(configure_args -S ${SOURCE_DIR}/tests/install_consumer -B ${WORK_DIR}/build
    -Dstackwalk_DIR=${prefix}/lib/cmake/stackwalk)
if(TOOLCHAIN_FILE)
  list(APPEND configure_args -DCMAKE_TOOLCHAIN_FILE=${TOOLCHAIN_FILE})
endif()
run(${CMAKE_COMMAND} ${configure_args})
run(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
run(${EMULATOR} ${WORK_DIR}/build/consumer_static)
run(${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${prefix}/lib ${EMULATOR} ${WORK_DIR}/build/consumer_shared)
if(EXISTS ${WORK_DIR}/build/consumer_symbolize)
  run(${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${prefix}/lib ${WORK_DIR}/build/consumer_symbolize)
  if(NOT LAST_OUTPUT MATCHES "in main at .*consumer_symbolize.cc:")
    message(FATAL_ERROR "the symbolizer consumer printed no file:line:\n${LAST_OUTPUT}")
  endif()
endif()
if(EXISTS ${WORK_DIR}/build/consumer_leakcheck)
  # In-process: the consumer checks its own allocations.
  run(${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${prefix}/lib ${WORK_DIR}/build/consumer_leakcheck)
  if(NOT LAST_OUTPUT MATCHES "leaks: 100 bytes in 1 allocations")
    message(FATAL_ERROR "the in-process leak checker consumer saw:\n${LAST_OUTPUT}")
  endif()
  # The installed launcher finds its preload library in ../lib.
  run(${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${prefix}/lib ${prefix}/bin/stackwalk-leakcheck
      --output ${WORK_DIR}/leaks.txt ${WORK_DIR}/build/consumer_symbolize)
  file(READ ${WORK_DIR}/leaks.txt leaks)
  if(NOT leaks MATCHES "SUMMARY: stackwalk-leakcheck: ")
    message(FATAL_ERROR "the installed stackwalk-leakcheck wrote no report:\n${leaks}")
  endif()
endif()

run(${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${prefix}/lib/pkgconfig pkg-config --cflags --libs stackwalk)
string(STRIP "${LAST_OUTPUT}" pc_flags)
separate_arguments(pc_flags UNIX_COMMAND "${pc_flags}")
run(${C_COMPILER} -fno-omit-frame-pointer ${SOURCE_DIR}/tests/install_consumer/consumer.c ${pc_flags}
    -o ${WORK_DIR}/consumer_pkgconfig)
run(${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${prefix}/lib ${EMULATOR} ${WORK_DIR}/consumer_pkgconfig)
