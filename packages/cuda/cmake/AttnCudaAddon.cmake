# Shared CMake for attn's CUDA addons (@attn/cuda and the kernel packages):
#   include(${CMAKE_CURRENT_LIST_DIR}/../cuda/cmake/AttnCudaAddon.cmake)   # from a kernel package
#   attn_cuda_addon(<target> SOURCES a.cu b.cpp ...)
# Arch list: -DATTN_CUDA_ARCHS="90a;80" (native-build.mjs passes $ATTN_CUDA_ARCHS). The default, 80 and
# 90a, runs on sm80/86/89 (sm_80 machine code) and uses Hopper-only instructions on sm90.
# cudart is linked statically, so an addon needs only the driver at run time.

if(NOT DEFINED ATTN_CUDA_ARCHS OR ATTN_CUDA_ARCHS STREQUAL "")
  set(ATTN_CUDA_ARCHS "80;90a")
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

# node-addon-api's include dir, resolved from the calling package (pnpm does not hoist it).
execute_process(
  COMMAND node -p "require('node-addon-api').include_dir"
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
  OUTPUT_VARIABLE ATTN_NODE_ADDON_API_DIR
  OUTPUT_STRIP_TRAILING_WHITESPACE)

# The arch list as one comma-separated word ("80,90a"): a ';' inside a compile definition would split
# it into two definitions.
string(REPLACE ";" "," ATTN_CUDA_ARCHS_CSV "${ATTN_CUDA_ARCHS}")

function(attn_cuda_addon target)
  cmake_parse_arguments(ARG "" "" "SOURCES" ${ARGN})
  add_library(${target} SHARED ${ARG_SOURCES} ${CMAKE_JS_SRC})
  set_target_properties(${target} PROPERTIES PREFIX "" SUFFIX ".node"
    CUDA_SEPARABLE_COMPILATION OFF CUDA_RUNTIME_LIBRARY Static)
  target_include_directories(${target} PRIVATE ${CMAKE_JS_INC} ${ATTN_NODE_ADDON_API_DIR} ${ATTN_CUDA_INCLUDE_DIR}
    ${CUDAToolkit_INCLUDE_DIRS})
  target_compile_definitions(${target} PRIVATE NAPI_VERSION=8 NODE_ADDON_API_CPP_EXCEPTIONS
    NODE_ADDON_API_DISABLE_DEPRECATED ATTN_CUDA_ARCHS_STRING="${ATTN_CUDA_ARCHS_CSV}")
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr -lineinfo -Xptxas=-warn-spills>
    $<$<COMPILE_LANGUAGE:CXX>:-fexceptions -Wall>)
  target_link_libraries(${target} PRIVATE ${CMAKE_JS_LIB})
endfunction()
