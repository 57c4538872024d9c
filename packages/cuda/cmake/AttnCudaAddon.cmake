# Shared CMake for attn's CUDA addons (@attn/cuda and the kernel packages), after AttnNodeAddon.cmake:
#   attn_require_dirs(CUDA)
#   include(${ATTN_DIR_CUDA}/cmake/AttnCudaAddon.cmake)   # from a kernel package
#   attn_cuda_addon(<target> SOURCES a.cu b.cpp ...)
# Arch list: ATTN_CUDA_ARCHS, which `attn-native build` always passes (its default "80;90a" runs on
# sm80/86/89 as sm_80 machine code and uses Hopper-only instructions on sm90; the release list adds
# sm86/sm89 machine code and compute_90 PTX). cudart is linked statically, so an addon needs only
# the driver at run time.

if(NOT ATTN_CUDA_ARCHS)
  message(FATAL_ERROR "attn: ATTN_CUDA_ARCHS is not set; build with `npx @attn/native build <package>`")
endif()
# CMAKE_CUDA_ARCHITECTURES must be set before enable_language(CUDA).
set(CMAKE_CUDA_ARCHITECTURES ${ATTN_CUDA_ARCHS})
enable_language(CUDA)
# C++ sources of an addon include attn/cuda_check.h, which needs cuda_runtime.h.
find_package(CUDAToolkit REQUIRED)
set(CMAKE_CUDA_STANDARD 17)
set(CMAKE_CUDA_STANDARD_REQUIRED ON)
set(CMAKE_CXX_STANDARD 17)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_CUDA_RUNTIME_LIBRARY Static)
set(CMAKE_POSITION_INDEPENDENT_CODE ON)
if(NOT CMAKE_BUILD_TYPE)
  set(CMAKE_BUILD_TYPE Release)
endif()

set(ATTN_CUDA_INCLUDE_DIR ${CMAKE_CURRENT_LIST_DIR}/../native/include)

# The arch list as one comma-separated word ("80,90a"): a ';' inside a compile definition would split
# it into two definitions.
string(REPLACE ";" "," ATTN_CUDA_ARCHS_CSV "${ATTN_CUDA_ARCHS}")

function(attn_cuda_addon target)
  cmake_parse_arguments(ARG "" "" "SOURCES" ${ARGN})
  add_library(${target} SHARED ${ARG_SOURCES} ${CMAKE_JS_SRC})
  attn_node_addon_target(${target})
  set_target_properties(${target} PROPERTIES CUDA_SEPARABLE_COMPILATION OFF CUDA_RUNTIME_LIBRARY Static)
  target_include_directories(${target} PRIVATE ${ATTN_CUDA_INCLUDE_DIR} ${CUDAToolkit_INCLUDE_DIRS})
  target_compile_definitions(${target} PRIVATE ATTN_CUDA_ARCHS_STRING="${ATTN_CUDA_ARCHS_CSV}")
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr -lineinfo -Xptxas=-warn-spills>
    $<$<COMPILE_LANGUAGE:CXX>:-fexceptions -Wall>)
endfunction()
