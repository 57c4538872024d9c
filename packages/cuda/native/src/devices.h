// What the runtime can say about the machine's devices.
#pragma once
#include <cstddef>
#include <string>

#include "attn/gpu_api.h"

namespace attn {

// The outcome of asking the runtime for its devices; taken once per process (devices do not appear
// while it runs) and never throws, so availability() can report a failure as a reason.
struct DeviceProbe {
  int count = 0;
  gpuError_t error = gpuSuccess;
};
const DeviceProbe& probe_devices();

// The number of devices; throws CudaError when the probe failed.
int device_count();
// Throws InvalidArgument (code ATTN_DEVICE_INDEX) unless 0 <= device < device_count().
void check_device_index(int device);

struct DeviceInfo {
  std::string name;
  std::string arch;  // sm_90 / gfx942
  int major = 0, minor = 0;
  int multiprocessor_count = 0;
  std::size_t total_memory_bytes = 0;
  int l2_cache_bytes = 0;
  int shared_memory_per_block = 0;
  int shared_memory_per_block_optin = 0;
  int warp_size = 0;
  int max_threads_per_block = 0;
  int pci_domain = 0, pci_bus = 0, pci_device = 0;
};
DeviceInfo device_info(int device);

int driver_version();   // e.g. 13000 for CUDA 13.0; 0 when no driver is installed
int runtime_version();  // of the statically linked runtime

}  // namespace attn
