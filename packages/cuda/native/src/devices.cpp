#include "devices.h"

#include <mutex>

#include "attn/cuda_check.h"
#include "errors.h"

namespace attn {

const DeviceProbe& probe_devices() {
  static DeviceProbe probe;
  static std::once_flag once;
  std::call_once(once, [] {
    int count = 0;
    probe.error = gpuGetDeviceCount(&count);
    probe.count = probe.error == gpuSuccess ? count : 0;
    // A failed probe (no driver, no device) must not linger as the last error: kernel packages
    // check gpuGetLastError() after their launches.
    (void)gpuGetLastError();
  });
  return probe;
}

int device_count() {
  const DeviceProbe& probe = probe_devices();
  if (probe.error != gpuSuccess) {
    throw CudaError(probe.error, std::string("no " ATTN_GPU_PLATFORM " device: ") + gpuGetErrorName(probe.error) +
                                     " (" + gpuGetErrorString(probe.error) + ")");
  }
  return probe.count;
}

void check_device_index(int device) {
  const int count = device_count();
  if (device < 0 || device >= count) {
    throw InvalidArgument("device index " + std::to_string(device) + " is out of range: this machine has " +
                              std::to_string(count) + " " ATTN_GPU_PLATFORM " device(s); use 0.." +
                              std::to_string(count - 1),
                          "ATTN_DEVICE_INDEX");
  }
}

DeviceInfo device_info(int device) {
  check_device_index(device);
  gpuDeviceProp_t prop{};
  ATTN_CUDA_CHECK(gpuGetDeviceProperties(&prop, device));
  DeviceInfo info;
  info.name = prop.name;
  info.arch = gpu_arch_name(prop);
  info.total_memory_bytes = prop.totalGlobalMem;
  ATTN_CUDA_CHECK(gpuDeviceGetAttribute(&info.major, gpuDevAttrComputeCapabilityMajor, device));
  ATTN_CUDA_CHECK(gpuDeviceGetAttribute(&info.minor, gpuDevAttrComputeCapabilityMinor, device));
  ATTN_CUDA_CHECK(gpuDeviceGetAttribute(&info.multiprocessor_count, gpuDevAttrMultiProcessorCount, device));
  ATTN_CUDA_CHECK(gpuDeviceGetAttribute(&info.l2_cache_bytes, gpuDevAttrL2CacheSize, device));
  ATTN_CUDA_CHECK(gpuDeviceGetAttribute(&info.shared_memory_per_block, gpuDevAttrMaxSharedMemoryPerBlock, device));
  ATTN_CUDA_CHECK(gpu_shared_mem_per_block_optin(&info.shared_memory_per_block_optin, device));
  ATTN_CUDA_CHECK(gpuDeviceGetAttribute(&info.warp_size, gpuDevAttrWarpSize, device));
  ATTN_CUDA_CHECK(gpuDeviceGetAttribute(&info.max_threads_per_block, gpuDevAttrMaxThreadsPerBlock, device));
  ATTN_CUDA_CHECK(gpuDeviceGetAttribute(&info.pci_domain, gpuDevAttrPciDomainId, device));
  ATTN_CUDA_CHECK(gpuDeviceGetAttribute(&info.pci_bus, gpuDevAttrPciBusId, device));
  ATTN_CUDA_CHECK(gpuDeviceGetAttribute(&info.pci_device, gpuDevAttrPciDeviceId, device));
  return info;
}

int driver_version() {
  int version = 0;
  // Succeeds with 0 when no driver is installed, so `attn doctor` can show it on any machine.
  ATTN_CUDA_CHECK(gpuDriverGetVersion(&version));
  return version;
}

int runtime_version() {
  int version = 0;
  ATTN_CUDA_CHECK(gpuRuntimeGetVersion(&version));
  return version;
}

}  // namespace attn
