# Shared CMake for every attn addon. An addon package's CMakeLists.txt includes it through
# ${ATTN_DIR_NATIVE}: `attn-native build` (the one way to build an addon, in the monorepo or from an
# installed package) passes ATTN_DIR_<NAME> for each @attn package the addon's package depends on,
# and ATTN_NODE_ADDON_API_DIR (node-addon-api's folder), so no build reaches outside the package's
# own folder or its declared dependencies.
#   attn_node_addon_target(<target>)   .node suffix; Node-API 8 with C++ exceptions; node-addon-api
#                                      and attn's shared headers (attn/philox.h) on the include path
#   attn_require_dirs(CUDA ROCM ...)   stop with a clear message when a dependency's folder is missing
#
# Node-API 8 keeps one binary working on Node 20, 22 and 24; cmake-js takes the headers from the
# node-api-headers package (the "binary": {"napi_versions": [8]} field), so nothing is downloaded.

if(NOT ATTN_NODE_ADDON_API_DIR OR NOT EXISTS "${ATTN_NODE_ADDON_API_DIR}/napi.h")
  message(FATAL_ERROR "attn: ATTN_NODE_ADDON_API_DIR must name node-addon-api's folder; build with `npx @attn/native build <package>`")
endif()
set(ATTN_NATIVE_INCLUDE_DIR ${CMAKE_CURRENT_LIST_DIR}/../include)

macro(attn_require_dirs)
  foreach(_attn_dep ${ARGN})
    if(NOT ATTN_DIR_${_attn_dep} OR NOT EXISTS "${ATTN_DIR_${_attn_dep}}/package.json")
      string(TOLOWER "${_attn_dep}" _attn_dep_lower)
      string(REPLACE "_" "-" _attn_dep_lower "${_attn_dep_lower}")
      message(FATAL_ERROR "attn: @attn/${_attn_dep_lower} was not found (ATTN_DIR_${_attn_dep}); install it beside this package and build with `npx @attn/native build <package>`")
    endif()
  endforeach()
endmacro()

function(attn_node_addon_target target)
  set_target_properties(${target} PROPERTIES PREFIX "" SUFFIX ".node")
  target_include_directories(${target} PRIVATE ${CMAKE_JS_INC} ${ATTN_NODE_ADDON_API_DIR} ${ATTN_NATIVE_INCLUDE_DIR})
  target_compile_definitions(${target} PRIVATE NAPI_VERSION=8 NODE_ADDON_API_CPP_EXCEPTIONS NODE_ADDON_API_DISABLE_DEPRECATED)
  target_link_libraries(${target} PRIVATE ${CMAKE_JS_LIB})
endfunction()
