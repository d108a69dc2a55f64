# abseil's signal-safe demangler for a cross build: the target's own libabsl_demangle_internal.a,
# unpacked from Debian's package for that architecture by scripts/setup.sh under
# STACKWALK_CROSS_ABSL_ROOT/<multiarch>/usr. Its one object (demangle.cc.o) is built into
# libstackwalk, so nothing of abseil is needed at run time under qemu.
#
# stackwalk_cross_absl_demangle(<target>) makes <target>, an imported OBJECT library of that
# object with abseil's headers, when the toolchain names STACKWALK_MULTIARCH and the archive and
# headers are there; otherwise it makes nothing (the signal-safe path then prints mangled names).
set(STACKWALK_CROSS_ABSL_ROOT "/opt/stackwalk-cross" CACHE PATH
    "Where scripts/setup.sh unpacks abseil for the cross targets (<root>/<multiarch>/usr/...)")

function(stackwalk_cross_absl_demangle target)
  if(NOT STACKWALK_MULTIARCH)
    return()
  endif()
  set(prefix "${STACKWALK_CROSS_ABSL_ROOT}/${STACKWALK_MULTIARCH}/usr")
  set(archive "${prefix}/lib/${STACKWALK_MULTIARCH}/libabsl_demangle_internal.a")
  if(NOT EXISTS "${archive}" OR NOT EXISTS "${prefix}/include/absl/debugging/internal/demangle.h")
    return()
  endif()
  set(dir "${CMAKE_BINARY_DIR}/cross_absl")
  file(MAKE_DIRECTORY "${dir}")
  execute_process(COMMAND ${CMAKE_AR} x "${archive}" demangle.cc.o
                  WORKING_DIRECTORY "${dir}" RESULT_VARIABLE ar_result)
  if(NOT ar_result EQUAL 0 OR NOT EXISTS "${dir}/demangle.cc.o")
    return()
  endif()
  add_library(${target} OBJECT IMPORTED GLOBAL)
  set_target_properties(${target} PROPERTIES
    IMPORTED_OBJECTS "${dir}/demangle.cc.o"
    INTERFACE_INCLUDE_DIRECTORIES "${prefix}/include")  # imported: included as SYSTEM
  message(STATUS "stackwalk: abseil's demangler from ${archive}")
endfunction()
