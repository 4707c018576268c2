# plugnn_add_backend(<target> VENDOR <vendor> NAME <name> [VERSION <x.y.z>]
#                    SOURCES <src>... [OUTPUT_DIRECTORY <dir>])
#
# Builds a plugnn backend plugin: a MODULE library named <vendor>_<name>_backend.so
# (and, with VERSION, the real file <vendor>_<name>_backend.so.<x.y.z> with the
# .so.<x> and .so symlinks), compiled with hidden visibility, linked with a
# version script that exports only GetBackendId, GetVersion and BackendFactory,
# and linked against plugnn::plugin_common (the shared helpers and the header).
include_guard(GLOBAL)

if(NOT DEFINED PLUGNN_BACKEND_MAP)
  set(PLUGNN_BACKEND_MAP "${CMAKE_CURRENT_LIST_DIR}/plugnn_backend.map")
endif()

function(plugnn_add_backend target)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "VENDOR;NAME;VERSION;OUTPUT_DIRECTORY" "SOURCES")
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "plugnn_add_backend(${target}): unknown arguments ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  foreach(field VENDOR NAME)
    if(NOT ARG_${field} MATCHES "^[A-Za-z0-9]+$")
      message(FATAL_ERROR "plugnn_add_backend(${target}): ${field} '${ARG_${field}}' must be "
                          "one or more letters or digits (the file is <vendor>_<name>_backend.so)")
    endif()
  endforeach()
  if(DEFINED ARG_VERSION AND NOT ARG_VERSION MATCHES "^[0-9]+(\\.[0-9]+)*$")
    message(FATAL_ERROR "plugnn_add_backend(${target}): VERSION '${ARG_VERSION}' must be numbers "
                        "separated by dots")
  endif()
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "plugnn_add_backend(${target}): SOURCES is required")
  endif()

  add_library(${target} MODULE ${ARG_SOURCES})
  target_link_libraries(${target} PRIVATE plugnn::plugin_common)
  set_target_properties(${target} PROPERTIES
    PREFIX ""
    OUTPUT_NAME "${ARG_VENDOR}_${ARG_NAME}_backend"
    SUFFIX ".so"
    C_VISIBILITY_PRESET hidden
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    POSITION_INDEPENDENT_CODE ON)
  if(ARG_OUTPUT_DIRECTORY)
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY "${ARG_OUTPUT_DIRECTORY}")
  endif()
  if(CMAKE_SYSTEM_NAME STREQUAL "Linux" OR CMAKE_SYSTEM_NAME MATCHES "BSD")
    target_link_options(${target} PRIVATE
      "LINKER:--version-script=${PLUGNN_BACKEND_MAP}" "LINKER:--no-undefined")
    set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS "${PLUGNN_BACKEND_MAP}")
  endif()
  if(ARG_VERSION)
    # MODULE libraries get no SOVERSION symlinks from CMake: make the versioned file the
    # real one and link the shorter names to it, as a shared library install would.
    string(REGEX MATCH "^[0-9]+" major "${ARG_VERSION}")
    set(base "${ARG_VENDOR}_${ARG_NAME}_backend.so")
    set_target_properties(${target} PROPERTIES SUFFIX ".so.${ARG_VERSION}")
    add_custom_command(TARGET ${target} POST_BUILD
      COMMAND ${CMAKE_COMMAND} -E create_symlink "${base}.${ARG_VERSION}" "${base}.${major}"
      COMMAND ${CMAKE_COMMAND} -E create_symlink "${base}.${major}" "${base}"
      WORKING_DIRECTORY "$<TARGET_FILE_DIR:${target}>"
      VERBATIM)
    set_target_properties(${target} PROPERTIES PLUGNN_SYMLINKS "${base}.${major};${base}")
  endif()
endfunction()

# plugnn_install_backend(<target> DESTINATION <dir>): installs the plugin file and
# the symlinks plugnn_add_backend made for it.
function(plugnn_install_backend target)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "DESTINATION" "")
  install(TARGETS ${target} LIBRARY DESTINATION "${ARG_DESTINATION}")
  get_target_property(links ${target} PLUGNN_SYMLINKS)
  if(links)
    foreach(link IN LISTS links)
      install(FILES "$<TARGET_FILE_DIR:${target}>/${link}" DESTINATION "${ARG_DESTINATION}")
    endforeach()
  endif()
endfunction()
