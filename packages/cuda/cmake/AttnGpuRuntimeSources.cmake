# The device runtime's sources, shared by @attn/cuda (nvcc) and @attn/rocm (hipcc, -DATTN_HIP):
#   include(${ATTN_DIR_CUDA}/cmake/AttnGpuRuntimeSources.cmake)   # from @attn/rocm
#   add_library(attn_rocm SHARED ${ATTN_GPU_RUNTIME_SOURCES} ...)
#   set_source_files_properties(${ATTN_GPU_RUNTIME_KERNEL_SOURCES} PROPERTIES LANGUAGE HIP)
#   target_include_directories(attn_rocm PRIVATE ${ATTN_GPU_RUNTIME_INCLUDE_DIRS})
#   attn_gpu_runtime_build_config(attn_rocm ARCHS "gfx942,gfx90a" COMPILER "hipcc ..." FLAGS "...")
# Host sources are plain C++ written against native/include/attn/gpu_api.h; kernel sources hold
# __global__ functions (CUDA or HIP language).

set(ATTN_GPU_RUNTIME_DIR ${CMAKE_CURRENT_LIST_DIR}/../native)
set(ATTN_GPU_RUNTIME_HOST_SOURCES
  ${ATTN_GPU_RUNTIME_DIR}/src/addon.cpp
  ${ATTN_GPU_RUNTIME_DIR}/src/bind_async_read.cpp
  ${ATTN_GPU_RUNTIME_DIR}/src/bind_build_info.cpp
  ${ATTN_GPU_RUNTIME_DIR}/src/bind_devices.cpp
  ${ATTN_GPU_RUNTIME_DIR}/src/bind_graphs.cpp
  ${ATTN_GPU_RUNTIME_DIR}/src/bind_memory.cpp
  ${ATTN_GPU_RUNTIME_DIR}/src/bind_streams.cpp
  ${ATTN_GPU_RUNTIME_DIR}/src/bind_testing.cpp
  ${ATTN_GPU_RUNTIME_DIR}/src/caching_allocator.cpp
  ${ATTN_GPU_RUNTIME_DIR}/src/copies.cpp
  ${ATTN_GPU_RUNTIME_DIR}/src/devices.cpp
  ${ATTN_GPU_RUNTIME_DIR}/src/events.cpp
  ${ATTN_GPU_RUNTIME_DIR}/src/graphs.cpp
  ${ATTN_GPU_RUNTIME_DIR}/src/host_staging.cpp
  ${ATTN_GPU_RUNTIME_DIR}/src/napi_errors.cpp
  ${ATTN_GPU_RUNTIME_DIR}/src/streams.cpp)
set(ATTN_GPU_RUNTIME_KERNEL_SOURCES
  ${ATTN_GPU_RUNTIME_DIR}/src/philox_fill.cu)
set(ATTN_GPU_RUNTIME_SOURCES ${ATTN_GPU_RUNTIME_HOST_SOURCES} ${ATTN_GPU_RUNTIME_KERNEL_SOURCES})
set(ATTN_GPU_RUNTIME_INCLUDE_DIRS ${ATTN_GPU_RUNTIME_DIR}/include ${ATTN_GPU_RUNTIME_DIR}/src)

# Writes build_config.h (what buildInfo() reports) for <target> and adds it to the include path.
# ARCHS is one comma-separated word: a ';' list would reach this function as separate arguments.
function(attn_gpu_runtime_build_config target)
  cmake_parse_arguments(ARG "" "ARCHS;COMPILER;FLAGS" "" ${ARGN})
  set(ATTN_BUILD_ARCHS "${ARG_ARCHS}")
  set(ATTN_BUILD_COMPILER "${ARG_COMPILER}")
  set(ATTN_BUILD_COMPILER_VERSION "${CMAKE_CUDA_COMPILER_VERSION}${CMAKE_HIP_COMPILER_VERSION}")
  set(ATTN_BUILD_TYPE "${CMAKE_BUILD_TYPE}")
  # Quotes and backslashes would end the C string literal early.
  string(REPLACE "\\" "\\\\" ATTN_BUILD_FLAGS "${ARG_FLAGS}")
  string(REPLACE "\"" "\\\"" ATTN_BUILD_FLAGS "${ATTN_BUILD_FLAGS}")
  set(out_dir ${CMAKE_CURRENT_BINARY_DIR}/generated/${target})
  configure_file(${ATTN_GPU_RUNTIME_DIR}/src/build_config.h.in ${out_dir}/build_config.h @ONLY)
  target_include_directories(${target} PRIVATE ${out_dir})
endfunction()
