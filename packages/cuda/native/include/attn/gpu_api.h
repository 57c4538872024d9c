// The one place where attn's runtime sources name the vendor runtime. Everything in
// packages/cuda/native/src uses the gpu* names below, so the same sources build with nvcc (CUDA, the
// default) and with hipcc for @attn/rocm (define ATTN_HIP). Add a symbol here before using it anywhere
// else: to the shared list when the two vendors' names differ only by prefix, otherwise to both vendor
// lists (a name missing from the HIP list breaks @attn/rocm's build).
#pragma once

#include <string>

#ifdef ATTN_HIP
#include <hip/hip_runtime.h>
#else
#include <cuda_runtime.h>
#endif

// Most names differ only by the vendor's prefix (gpuMalloc: cudaMalloc / hipMalloc, gpuDevAttrWarpSize:
// cudaDevAttrWarpSize / hipDeviceAttributeWarpSize): those are pasted from the prefix below, and only the
// names that differ in more than the prefix are listed per vendor.
#ifdef ATTN_HIP
#define ATTN_GPU_PLATFORM "HIP"
#define ATTN_GPU_DEVICE_TYPE "rocm"
#define ATTN_GPU_RUNTIME_VERSION HIP_VERSION
#define ATTN_GPU_NAME(suffix) hip##suffix
#define ATTN_GPU_ATTR(suffix) hipDeviceAttribute##suffix
using gpuDeviceProp_t = hipDeviceProp_t;
using gpuDeviceAttr_t = hipDeviceAttribute_t;
#define gpuErrorMemoryAllocation hipErrorOutOfMemory
#define gpuHostAllocDefault hipHostMallocDefault
#define gpuDevAttrMultiProcessorCount hipDeviceAttributeMultiprocessorCount
#define gpuDevAttrMaxSharedMemoryPerBlockOptin hipDeviceAttributeSharedMemPerBlockOptin
#define gpuDevAttrPciDomainId hipDeviceAttributePciDomainID
#define gpuHostAlloc hipHostMalloc
#define gpuFreeHost hipHostFree
#else
#define ATTN_GPU_PLATFORM "CUDA"
#define ATTN_GPU_DEVICE_TYPE "cuda"
#define ATTN_GPU_RUNTIME_VERSION CUDART_VERSION
#define ATTN_GPU_NAME(suffix) cuda##suffix
#define ATTN_GPU_ATTR(suffix) cudaDevAttr##suffix
using gpuDeviceProp_t = cudaDeviceProp;
using gpuDeviceAttr_t = cudaDeviceAttr;
#define gpuErrorMemoryAllocation cudaErrorMemoryAllocation
#define gpuHostAllocDefault cudaHostAllocDefault
#define gpuDevAttrMultiProcessorCount cudaDevAttrMultiProcessorCount
#define gpuDevAttrMaxSharedMemoryPerBlockOptin cudaDevAttrMaxSharedMemoryPerBlockOptin
#define gpuDevAttrPciDomainId cudaDevAttrPciDomainId
#define gpuHostAlloc cudaHostAlloc
#define gpuFreeHost cudaFreeHost
#endif

using gpuError_t = ATTN_GPU_NAME(Error_t);
using gpuStream_t = ATTN_GPU_NAME(Stream_t);
using gpuEvent_t = ATTN_GPU_NAME(Event_t);
using gpuGraph_t = ATTN_GPU_NAME(Graph_t);
using gpuGraphExec_t = ATTN_GPU_NAME(GraphExec_t);
using gpuStreamCaptureStatus = ATTN_GPU_NAME(StreamCaptureStatus);
using gpuStreamCaptureMode = ATTN_GPU_NAME(StreamCaptureMode);

#define gpuSuccess ATTN_GPU_NAME(Success)
#define gpuErrorNotReady ATTN_GPU_NAME(ErrorNotReady)
#define gpuErrorNoDevice ATTN_GPU_NAME(ErrorNoDevice)
#define gpuErrorInsufficientDriver ATTN_GPU_NAME(ErrorInsufficientDriver)
#define gpuErrorInvalidValue ATTN_GPU_NAME(ErrorInvalidValue)

#define gpuMemcpyHostToDevice ATTN_GPU_NAME(MemcpyHostToDevice)
#define gpuMemcpyDeviceToHost ATTN_GPU_NAME(MemcpyDeviceToHost)
#define gpuMemcpyDeviceToDevice ATTN_GPU_NAME(MemcpyDeviceToDevice)
#define gpuStreamNonBlocking ATTN_GPU_NAME(StreamNonBlocking)
#define gpuEventDefault ATTN_GPU_NAME(EventDefault)
#define gpuEventDisableTiming ATTN_GPU_NAME(EventDisableTiming)

#define gpuDevAttrComputeCapabilityMajor ATTN_GPU_ATTR(ComputeCapabilityMajor)
#define gpuDevAttrComputeCapabilityMinor ATTN_GPU_ATTR(ComputeCapabilityMinor)
#define gpuDevAttrL2CacheSize ATTN_GPU_ATTR(L2CacheSize)
#define gpuDevAttrMaxSharedMemoryPerBlock ATTN_GPU_ATTR(MaxSharedMemoryPerBlock)
#define gpuDevAttrWarpSize ATTN_GPU_ATTR(WarpSize)
#define gpuDevAttrMaxThreadsPerBlock ATTN_GPU_ATTR(MaxThreadsPerBlock)
#define gpuDevAttrPciBusId ATTN_GPU_ATTR(PciBusId)
#define gpuDevAttrPciDeviceId ATTN_GPU_ATTR(PciDeviceId)

#define gpuGetErrorName ATTN_GPU_NAME(GetErrorName)
#define gpuGetErrorString ATTN_GPU_NAME(GetErrorString)
#define gpuGetLastError ATTN_GPU_NAME(GetLastError)
#define gpuPeekAtLastError ATTN_GPU_NAME(PeekAtLastError)
#define gpuGetDeviceCount ATTN_GPU_NAME(GetDeviceCount)
#define gpuGetDevice ATTN_GPU_NAME(GetDevice)
#define gpuSetDevice ATTN_GPU_NAME(SetDevice)
#define gpuGetDeviceProperties ATTN_GPU_NAME(GetDeviceProperties)
#define gpuDeviceGetAttribute ATTN_GPU_NAME(DeviceGetAttribute)
#define gpuDriverGetVersion ATTN_GPU_NAME(DriverGetVersion)
#define gpuRuntimeGetVersion ATTN_GPU_NAME(RuntimeGetVersion)
#define gpuDeviceSynchronize ATTN_GPU_NAME(DeviceSynchronize)
#define gpuMemGetInfo ATTN_GPU_NAME(MemGetInfo)
#define gpuMalloc ATTN_GPU_NAME(Malloc)
#define gpuFree ATTN_GPU_NAME(Free)
#define gpuMemcpyAsync ATTN_GPU_NAME(MemcpyAsync)
#define gpuMemcpyPeerAsync ATTN_GPU_NAME(MemcpyPeerAsync)
#define gpuMemsetAsync ATTN_GPU_NAME(MemsetAsync)
#define gpuStreamCreateWithFlags ATTN_GPU_NAME(StreamCreateWithFlags)
#define gpuStreamDestroy ATTN_GPU_NAME(StreamDestroy)
#define gpuStreamSynchronize ATTN_GPU_NAME(StreamSynchronize)
#define gpuStreamQuery ATTN_GPU_NAME(StreamQuery)
#define gpuStreamWaitEvent ATTN_GPU_NAME(StreamWaitEvent)
#define gpuEventCreateWithFlags ATTN_GPU_NAME(EventCreateWithFlags)
#define gpuEventDestroy ATTN_GPU_NAME(EventDestroy)
#define gpuEventRecord ATTN_GPU_NAME(EventRecord)
#define gpuEventSynchronize ATTN_GPU_NAME(EventSynchronize)
#define gpuEventQuery ATTN_GPU_NAME(EventQuery)
#define gpuEventElapsedTime ATTN_GPU_NAME(EventElapsedTime)
#define gpuStreamCaptureModeThreadLocal ATTN_GPU_NAME(StreamCaptureModeThreadLocal)
#define gpuStreamCaptureModeRelaxed ATTN_GPU_NAME(StreamCaptureModeRelaxed)
#define gpuStreamCaptureStatusNone ATTN_GPU_NAME(StreamCaptureStatusNone)
#define gpuStreamBeginCapture ATTN_GPU_NAME(StreamBeginCapture)
#define gpuStreamEndCapture ATTN_GPU_NAME(StreamEndCapture)
#define gpuStreamIsCapturing ATTN_GPU_NAME(StreamIsCapturing)
#define gpuThreadExchangeStreamCaptureMode ATTN_GPU_NAME(ThreadExchangeStreamCaptureMode)
#define gpuGraphInstantiateWithFlags ATTN_GPU_NAME(GraphInstantiateWithFlags)
#define gpuGraphLaunch ATTN_GPU_NAME(GraphLaunch)
#define gpuGraphExecDestroy ATTN_GPU_NAME(GraphExecDestroy)
#define gpuGraphDestroy ATTN_GPU_NAME(GraphDestroy)
#define gpuGraphGetNodes ATTN_GPU_NAME(GraphGetNodes)

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
