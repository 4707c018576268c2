# plugnn_read_api_version(<header>): sets PLUGNN_BACKEND_API_VERSION_MAJOR/_MINOR and
# PLUGNN_BACKEND_API_VERSION ("major.minor") from the macros in backend_api.h, the one
# source of the version.
function(plugnn_read_api_version header)
  file(STRINGS "${header}" lines REGEX "^#define PLUGNN_BACKEND_API_VERSION_(MAJOR|MINOR) ")
  foreach(line IN LISTS lines)
    if(line MATCHES "^#define PLUGNN_BACKEND_API_VERSION_(MAJOR|MINOR) +([0-9]+)")
      set(PLUGNN_BACKEND_API_VERSION_${CMAKE_MATCH_1} "${CMAKE_MATCH_2}" PARENT_SCOPE)
      set(_${CMAKE_MATCH_1} "${CMAKE_MATCH_2}")
    endif()
  endforeach()
  if("${_MAJOR}" STREQUAL "" OR "${_MINOR}" STREQUAL "")
    message(FATAL_ERROR "plugnn: no backend API version macros in ${header}")
  endif()
  set(PLUGNN_BACKEND_API_VERSION "${_MAJOR}.${_MINOR}" PARENT_SCOPE)
endfunction()
