# Shared CMake for attn's ROCm addons (@attn/rocm, @attn/rocm-aotriton, @attn/rocm-ck). Include it
# after project() and @attn/native's AttnNodeAddon.cmake; AttnHipToolchain.cmake before project().
#   attn_native_skip("<reason>")                      write build/SKIPPED and stop configuring (exit 0)
#   attn_hip_addon(<target> SOURCES ... [INCLUDES ...] [HOST_ONLY])
# Arch list: ATTN_ROCM_ARCHS (environment or -D; ';' or ',' separated), default gfx90a;gfx942;gfx950.
# With the default list, archs this hipcc does not know (Debian's clang 15 lacks gfx942 and gfx950)
# are dropped with a message; an explicit list is taken as given and fails loudly.

set(CMAKE_CXX_STANDARD 17)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_POSITION_INDEPENDENT_CODE ON)
if(NOT CMAKE_BUILD_TYPE)
  set(CMAKE_BUILD_TYPE Release)
endif()
file(REMOVE "${CMAKE_BINARY_DIR}/SKIPPED")

# Build commands run hipcc too (compile and link): keep it on the AMD platform there as well.
set(CMAKE_CXX_COMPILER_LAUNCHER ${CMAKE_COMMAND} -E env HIP_PLATFORM=amd)
set(CMAKE_CXX_LINKER_LAUNCHER ${CMAKE_COMMAND} -E env HIP_PLATFORM=amd)

# Records why the addon is not built. The caller returns right after (return() in a macro would only
# leave this module): `attn_native_skip("why")` then `return()`, or check ATTN_NATIVE_SKIPPED.
macro(attn_native_skip reason)
  file(WRITE "${CMAKE_BINARY_DIR}/SKIPPED" "${reason}\n")
  message(WARNING "attn: native addon skipped: ${reason}")
  set(ATTN_NATIVE_SKIPPED ON)
endmacro()

# @attn/cuda's headers (attn/gpu_api.h maps the runtime calls to HIP): @attn/rocm depends on it.
attn_require_dirs(CUDA)
set(ATTN_ROCM_INCLUDE_DIR ${ATTN_DIR_CUDA}/native/include)

if(NOT DEFINED ATTN_ROCM_ARCHS AND DEFINED ENV{ATTN_ROCM_ARCHS})
  set(ATTN_ROCM_ARCHS "$ENV{ATTN_ROCM_ARCHS}")
endif()
if(NOT DEFINED ATTN_ROCM_ARCHS OR ATTN_ROCM_ARCHS STREQUAL "")
  set(_attn_requested gfx90a gfx942 gfx950)
  set(_attn_filter ON)
else()
  string(REPLACE "," ";" _attn_requested "${ATTN_ROCM_ARCHS}")
  set(_attn_filter OFF)
endif()
set(ATTN_ROCM_ARCH_LIST "")
set(_attn_dropped "")
file(WRITE "${CMAKE_BINARY_DIR}/attn_arch_probe.hip" "")
foreach(arch IN LISTS _attn_requested)
  if(_attn_filter)
    execute_process(
      COMMAND ${CMAKE_COMMAND} -E env HIP_PLATFORM=amd ${CMAKE_CXX_COMPILER} -x hip --offload-arch=${arch}
              -fsyntax-only ${CMAKE_BINARY_DIR}/attn_arch_probe.hip
      RESULT_VARIABLE _attn_rc OUTPUT_QUIET ERROR_QUIET)
    if(NOT _attn_rc EQUAL 0)
      list(APPEND _attn_dropped ${arch})
      continue()
    endif()
  endif()
  list(APPEND ATTN_ROCM_ARCH_LIST ${arch})
endforeach()
if(_attn_dropped)
  message(STATUS "attn: this hipcc cannot target ${_attn_dropped}; building for ${ATTN_ROCM_ARCH_LIST} (set ATTN_ROCM_ARCHS to choose)")
endif()
set(ATTN_NATIVE_SKIPPED OFF)
if(NOT ATTN_ROCM_ARCH_LIST)
  attn_native_skip("hipcc (${CMAKE_CXX_COMPILER}) targets none of gfx90a, gfx942, gfx950; set ATTN_ROCM_ARCHS to archs it supports")
endif()
string(REPLACE ";" "," ATTN_ROCM_ARCHS_STRING "${ATTN_ROCM_ARCH_LIST}")

function(attn_hip_addon target)
  cmake_parse_arguments(ARG "HOST_ONLY" "" "SOURCES;INCLUDES" ${ARGN})
  add_library(${target} SHARED ${ARG_SOURCES} ${CMAKE_JS_SRC})
  attn_node_addon_target(${target})
  target_include_directories(${target} PRIVATE ${ATTN_ROCM_INCLUDE_DIR} ${ARG_INCLUDES})
  target_compile_definitions(${target} PRIVATE ATTN_HIP __HIP_PLATFORM_AMD__
    ATTN_ROCM_ARCHS_STRING="${ATTN_ROCM_ARCHS_STRING}" ATTN_CUDA_ARCHS_STRING="${ATTN_ROCM_ARCHS_STRING}")
  target_compile_options(${target} PRIVATE -fexceptions -Wall)
  if(NOT ARG_HOST_ONLY)
    # Every source is HIP (the .cu files of @attn/cuda included): one source, two builds.
    set(offload "")
    foreach(arch IN LISTS ATTN_ROCM_ARCH_LIST)
      list(APPEND offload --offload-arch=${arch})
    endforeach()
    foreach(src IN LISTS ARG_SOURCES)
      if(src MATCHES "\\.(cu|hip)$")
        set_source_files_properties(${src} PROPERTIES LANGUAGE CXX)
      endif()
    endforeach()
    target_compile_options(${target} PRIVATE -x hip ${offload})
  endif()
endfunction()
