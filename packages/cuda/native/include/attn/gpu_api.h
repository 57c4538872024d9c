// The one place where attn's runtime sources name the vendor runtime. Everything in
// packages/cuda/native/src uses the gpu* names below, so the same sources build with nvcc (CUDA, the
// default) and with hipcc for @attn/rocm (define ATTN_HIP). Add a symbol here, in both branches,
// before using it anywhere else: a name missing from the HIP branch breaks @attn/rocm's build.
#pragma once

#include <string>

#ifdef ATTN_HIP
#include <hip/hip_runtime.h>
#else
#include <cuda_runtime.h>
#endif

#ifdef ATTN_HIP
// ---------------------------------------------------------------- HIP (ROCm) ------------------
#define ATTN_GPU_PLATFORM "HIP"
#define ATTN_GPU_DEVICE_TYPE "rocm"
#define ATTN_GPU_RUNTIME_VERSION HIP_VERSION

using gpuError_t = hipError_t;
using gpuStream_t = hipStream_t;
using gpuEvent_t = hipEvent_t;
using gpuDeviceProp_t = hipDeviceProp_t;
using gpuDeviceAttr_t = hipDeviceAttribute_t;
using gpuGraph_t = hipGraph_t;
using gpuGraphExec_t = hipGraphExec_t;
using gpuStreamCaptureStatus = hipStreamCaptureStatus;
using gpuStreamCaptureMode = hipStreamCaptureMode;

#define gpuSuccess hipSuccess
#define gpuErrorMemoryAllocation hipErrorOutOfMemory
#define gpuErrorNotReady hipErrorNotReady
#define gpuErrorNoDevice hipErrorNoDevice
#define gpuErrorInsufficientDriver hipErrorInsufficientDriver
#define gpuErrorInvalidValue hipErrorInvalidValue

#define gpuMemcpyHostToDevice hipMemcpyHostToDevice
#define gpuMemcpyDeviceToHost hipMemcpyDeviceToHost
#define gpuMemcpyDeviceToDevice hipMemcpyDeviceToDevice
#define gpuStreamNonBlocking hipStreamNonBlocking
#define gpuEventDefault hipEventDefault
#define gpuEventDisableTiming hipEventDisableTiming
#define gpuHostAllocDefault hipHostMallocDefault

#define gpuDevAttrComputeCapabilityMajor hipDeviceAttributeComputeCapabilityMajor
#define gpuDevAttrComputeCapabilityMinor hipDeviceAttributeComputeCapabilityMinor
#define gpuDevAttrMultiProcessorCount hipDeviceAttributeMultiprocessorCount
#define gpuDevAttrL2CacheSize hipDeviceAttributeL2CacheSize
#define gpuDevAttrMaxSharedMemoryPerBlock hipDeviceAttributeMaxSharedMemoryPerBlock
#define gpuDevAttrMaxSharedMemoryPerBlockOptin hipDeviceAttributeSharedMemPerBlockOptin
#define gpuDevAttrWarpSize hipDeviceAttributeWarpSize
#define gpuDevAttrMaxThreadsPerBlock hipDeviceAttributeMaxThreadsPerBlock
#define gpuDevAttrPciBusId hipDeviceAttributePciBusId
#define gpuDevAttrPciDeviceId hipDeviceAttributePciDeviceId
#define gpuDevAttrPciDomainId hipDeviceAttributePciDomainID

#define gpuGetErrorName hipGetErrorName
#define gpuGetErrorString hipGetErrorString
#define gpuGetLastError hipGetLastError
#define gpuPeekAtLastError hipPeekAtLastError
#define gpuGetDeviceCount hipGetDeviceCount
#define gpuGetDevice hipGetDevice
#define gpuSetDevice hipSetDevice
#define gpuGetDeviceProperties hipGetDeviceProperties
#define gpuDeviceGetAttribute hipDeviceGetAttribute
#define gpuDriverGetVersion hipDriverGetVersion
#define gpuRuntimeGetVersion hipRuntimeGetVersion
#define gpuDeviceSynchronize hipDeviceSynchronize
#define gpuMemGetInfo hipMemGetInfo
#define gpuMalloc hipMalloc
#define gpuFree hipFree
#define gpuHostAlloc hipHostMalloc
#define gpuFreeHost hipHostFree
#define gpuMemcpyAsync hipMemcpyAsync
#define gpuMemcpyPeerAsync hipMemcpyPeerAsync
#define gpuMemsetAsync hipMemsetAsync
#define gpuStreamCreateWithFlags hipStreamCreateWithFlags
#define gpuStreamDestroy hipStreamDestroy
#define gpuStreamSynchronize hipStreamSynchronize
#define gpuStreamQuery hipStreamQuery
#define gpuStreamWaitEvent hipStreamWaitEvent
#define gpuEventCreateWithFlags hipEventCreateWithFlags
#define gpuEventDestroy hipEventDestroy
#define gpuEventRecord hipEventRecord
#define gpuEventSynchronize hipEventSynchronize
#define gpuEventQuery hipEventQuery
#define gpuEventElapsedTime hipEventElapsedTime
#define gpuStreamCaptureModeThreadLocal hipStreamCaptureModeThreadLocal
#define gpuStreamCaptureModeRelaxed hipStreamCaptureModeRelaxed
#define gpuStreamCaptureStatusNone hipStreamCaptureStatusNone
#define gpuStreamBeginCapture hipStreamBeginCapture
#define gpuStreamEndCapture hipStreamEndCapture
#define gpuStreamIsCapturing hipStreamIsCapturing
#define gpuThreadExchangeStreamCaptureMode hipThreadExchangeStreamCaptureMode
#define gpuGraphInstantiateWithFlags hipGraphInstantiateWithFlags
#define gpuGraphLaunch hipGraphLaunch
#define gpuGraphExecDestroy hipGraphExecDestroy
#define gpuGraphDestroy hipGraphDestroy
#define gpuGraphGetNodes hipGraphGetNodes

#else
// ---------------------------------------------------------------- CUDA ------------------------
#define ATTN_GPU_PLATFORM "CUDA"
#define ATTN_GPU_DEVICE_TYPE "cuda"
#define ATTN_GPU_RUNTIME_VERSION CUDART_VERSION

using gpuError_t = cudaError_t;
using gpuStream_t = cudaStream_t;
using gpuEvent_t = cudaEvent_t;
using gpuDeviceProp_t = cudaDeviceProp;
using gpuDeviceAttr_t = cudaDeviceAttr;
using gpuGraph_t = cudaGraph_t;
using gpuGraphExec_t = cudaGraphExec_t;
using gpuStreamCaptureStatus = cudaStreamCaptureStatus;
using gpuStreamCaptureMode = cudaStreamCaptureMode;

#define gpuSuccess cudaSuccess
#define gpuErrorMemoryAllocation cudaErrorMemoryAllocation
#define gpuErrorNotReady cudaErrorNotReady
#define gpuErrorNoDevice cudaErrorNoDevice
#define gpuErrorInsufficientDriver cudaErrorInsufficientDriver
#define gpuErrorInvalidValue cudaErrorInvalidValue

#define gpuMemcpyHostToDevice cudaMemcpyHostToDevice
#define gpuMemcpyDeviceToHost cudaMemcpyDeviceToHost
#define gpuMemcpyDeviceToDevice cudaMemcpyDeviceToDevice
#define gpuStreamNonBlocking cudaStreamNonBlocking
#define gpuEventDefault cudaEventDefault
#define gpuEventDisableTiming cudaEventDisableTiming
#define gpuHostAllocDefault cudaHostAllocDefault

#define gpuDevAttrComputeCapabilityMajor cudaDevAttrComputeCapabilityMajor
#define gpuDevAttrComputeCapabilityMinor cudaDevAttrComputeCapabilityMinor
#define gpuDevAttrMultiProcessorCount cudaDevAttrMultiProcessorCount
#define gpuDevAttrL2CacheSize cudaDevAttrL2CacheSize
#define gpuDevAttrMaxSharedMemoryPerBlock cudaDevAttrMaxSharedMemoryPerBlock
#define gpuDevAttrMaxSharedMemoryPerBlockOptin cudaDevAttrMaxSharedMemoryPerBlockOptin
#define gpuDevAttrWarpSize cudaDevAttrWarpSize
#define gpuDevAttrMaxThreadsPerBlock cudaDevAttrMaxThreadsPerBlock
#define gpuDevAttrPciBusId cudaDevAttrPciBusId
#define gpuDevAttrPciDeviceId cudaDevAttrPciDeviceId
#define gpuDevAttrPciDomainId cudaDevAttrPciDomainId

#define gpuGetErrorName cudaGetErrorName
#define gpuGetErrorString cudaGetErrorString
#define gpuGetLastError cudaGetLastError
#define gpuPeekAtLastError cudaPeekAtLastError
#define gpuGetDeviceCount cudaGetDeviceCount
#define gpuGetDevice cudaGetDevice
#define gpuSetDevice cudaSetDevice
#define gpuGetDeviceProperties cudaGetDeviceProperties
#define gpuDeviceGetAttribute cudaDeviceGetAttribute
#define gpuDriverGetVersion cudaDriverGetVersion
#define gpuRuntimeGetVersion cudaRuntimeGetVersion
#define gpuDeviceSynchronize cudaDeviceSynchronize
#define gpuMemGetInfo cudaMemGetInfo
#define gpuMalloc cudaMalloc
#define gpuFree cudaFree
#define gpuHostAlloc cudaHostAlloc
#define gpuFreeHost cudaFreeHost
#define gpuMemcpyAsync cudaMemcpyAsync
#define gpuMemcpyPeerAsync cudaMemcpyPeerAsync
#define gpuMemsetAsync cudaMemsetAsync
#define gpuStreamCreateWithFlags cudaStreamCreateWithFlags
#define gpuStreamDestroy cudaStreamDestroy
#define gpuStreamSynchronize cudaStreamSynchronize
#define gpuStreamQuery cudaStreamQuery
#define gpuStreamWaitEvent cudaStreamWaitEvent
#define gpuEventCreateWithFlags cudaEventCreateWithFlags
#define gpuEventDestroy cudaEventDestroy
#define gpuEventRecord cudaEventRecord
#define gpuEventSynchronize cudaEventSynchronize
#define gpuEventQuery cudaEventQuery
#define gpuEventElapsedTime cudaEventElapsedTime
#define gpuStreamCaptureModeThreadLocal cudaStreamCaptureModeThreadLocal
#define gpuStreamCaptureModeRelaxed cudaStreamCaptureModeRelaxed
#define gpuStreamCaptureStatusNone cudaStreamCaptureStatusNone
#define gpuStreamBeginCapture cudaStreamBeginCapture
#define gpuStreamEndCapture cudaStreamEndCapture
#define gpuStreamIsCapturing cudaStreamIsCapturing
#define gpuThreadExchangeStreamCaptureMode cudaThreadExchangeStreamCaptureMode
#define gpuGraphInstantiateWithFlags cudaGraphInstantiateWithFlags
#define gpuGraphLaunch cudaGraphLaunch
#define gpuGraphExecDestroy cudaGraphExecDestroy
#define gpuGraphDestroy cudaGraphDestroy
#define gpuGraphGetNodes cudaGraphGetNodes
#endif

namespace attn {

// 'sm_90' on CUDA, the gfx target ('gfx942') on ROCm: what core's DeviceProperties.arch holds.
inline std::string gpu_arch_name(const gpuDeviceProp_t& prop) {
#ifdef ATTN_HIP
  // gcnArchName carries feature suffixes ('gfx942:sramecc+:xnack-'); the target is the part before ':'.
  std::string name(prop.gcnArchName);
  const auto colon = name.find(':');
  return colon == std::string::npos ? name : name.substr(0, colon);
#else
  return "sm_" + std::to_string(prop.major) + std::to_string(prop.minor);
#endif
}

// Largest dynamic shared memory one block may opt into. ROCm reports the opt-in attribute only on
// its CUDA path; on AMD the per-block maximum (the LDS size) is already the cap.
inline gpuError_t gpu_shared_mem_per_block_optin(int* bytes, int device) {
  gpuError_t err = gpuDeviceGetAttribute(bytes, gpuDevAttrMaxSharedMemoryPerBlockOptin, device);
#ifdef ATTN_HIP
  if (err != gpuSuccess || *bytes <= 0) {
    (void)gpuGetLastError();  // an unsupported attribute must not linger as the last error
    err = gpuDeviceGetAttribute(bytes, gpuDevAttrMaxSharedMemoryPerBlock, device);
  }
#endif
  return err;
}

}  // namespace attn
