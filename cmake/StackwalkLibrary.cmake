# One build target per folder (absl/debugging/CMakeLists.txt is the model).
#
# stackwalk_library(NAME <name> [SRCS <file>...] [DEPS <target>...] [PRIVATE_DEPS <target>...]
#                   [COPTS <option>...] [DEFINES <definition>...] [HIDDEN])
#
# Makes stackwalk_<name>: an OBJECT library of SRCS (position-independent, so that one compile
# serves the shared and the static products), or an INTERFACE library when there are no SRCS
# (a header-only folder). Every target sees src/ ("core/regs.h"); leakcheck/ and tools/ add the
# project root ("leakcheck/options.h") to theirs. DEPS are what its headers and sources include:
# other stackwalk_<folder> targets, stackwalk_public_headers (include/stackwalk/), or external
# targets; PRIVATE_DEPS are used by its sources only. HIDDEN compiles with hidden visibility.
#
# An OBJECT library's objects reach only a target that links it directly (CMake passes on the
# usage requirements of the rest), so a product or a test takes its objects through
# stackwalk_objects() / stackwalk_link_objects(), which follow DEPS and PRIVATE_DEPS down.

function(stackwalk_library)
  cmake_parse_arguments(ARG "HIDDEN" "NAME" "SRCS;DEPS;PRIVATE_DEPS;COPTS;DEFINES" ${ARGN})
  set(target stackwalk_${ARG_NAME})
  if(ARG_SRCS)
    add_library(${target} OBJECT ${ARG_SRCS})
    set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON)
    target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR}/src)
    target_link_libraries(${target} PUBLIC ${ARG_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
    target_compile_options(${target} PRIVATE ${ARG_COPTS})
    target_compile_definitions(${target} PRIVATE ${ARG_DEFINES})
    if(ARG_HIDDEN)
      set_target_properties(${target} PROPERTIES CXX_VISIBILITY_PRESET hidden
        VISIBILITY_INLINES_HIDDEN ON)
    endif()
  else()
    add_library(${target} INTERFACE)
    target_include_directories(${target} INTERFACE ${PROJECT_SOURCE_DIR}/src)
    target_link_libraries(${target} INTERFACE ${ARG_DEPS})
  endif()
  set_target_properties(${target} PROPERTIES STACKWALK_DEPS "${ARG_DEPS};${ARG_PRIVATE_DEPS}")
endfunction()

# The object libraries <target>... are made of, theirs included: every OBJECT library (imported
# ones too) reached through STACKWALK_DEPS, each once, in a stable order.
function(stackwalk_object_libraries out)
  set(seen "")
  set(queue ${ARGN})
  while(queue)
    list(POP_FRONT queue t)
    if(NOT TARGET ${t} OR t IN_LIST seen)
      continue()
    endif()
    list(APPEND seen ${t})
    get_target_property(deps ${t} STACKWALK_DEPS)
    if(deps)
      list(APPEND queue ${deps})
    endif()
  endwhile()
  set(result "")
  foreach(t IN LISTS seen)
    get_target_property(type ${t} TYPE)
    if(type STREQUAL "OBJECT_LIBRARY")
      list(APPEND result ${t})
    endif()
  endforeach()
  set(${out} ${result} PARENT_SCOPE)
endfunction()

# $<TARGET_OBJECTS:...> of those object libraries: the sources of a product library.
function(stackwalk_objects out)
  stackwalk_object_libraries(libs ${ARGN})
  set(result "")
  foreach(t IN LISTS libs)
    list(APPEND result $<TARGET_OBJECTS:${t}>)
  endforeach()
  set(${out} ${result} PARENT_SCOPE)
endfunction()

# Links <consumer> (a test or a tool) with <target>... and every object library under them.
function(stackwalk_link_objects consumer)
  stackwalk_object_libraries(libs ${ARGN})
  target_link_libraries(${consumer} PRIVATE ${ARGN} ${libs})
endfunction()
