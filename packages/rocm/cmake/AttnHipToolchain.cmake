# Include BEFORE project(): makes hipcc the C++ compiler of an attn ROCm addon.
#   include(${ATTN_DIR_ROCM}/cmake/AttnHipToolchain.cmake)   # from a kernel package
# hipcc comes from -DATTN_HIPCC (attn-native build passes it), else HIPCXX, ROCM_PATH or /opt/rocm.
# hipcc is used rather than CMake's HIP language because it works the same on AMD's ROCm packages
# and on distribution packages (Debian's hip-lang config sits where CMake < 3.28 does not look).

if(NOT ATTN_HIPCC)
  find_program(ATTN_HIPCC hipcc HINTS $ENV{HIPCXX} $ENV{ROCM_PATH}/bin /opt/rocm/bin)
endif()
if(NOT ATTN_HIPCC)
  message(FATAL_ERROR "attn: hipcc was not found; install ROCm or pass -DATTN_HIPCC=/path/to/hipcc")
endif()
# With a CUDA toolkit on the same machine hipcc would pick its NVIDIA path; attn wants AMD.
set(ENV{HIP_PLATFORM} amd)
set(CMAKE_CXX_COMPILER "${ATTN_HIPCC}" CACHE FILEPATH "hipcc, set by AttnHipToolchain.cmake" FORCE)
