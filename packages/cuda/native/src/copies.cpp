#include "copies.h"

#include <cstdint>

#include "attn/cuda_check.h"
#include "caching_allocator.h"
#include "device_guard.h"
#include "devices.h"
#include "errors.h"
#include "graphs.h"
#include "host_staging.h"
#include "streams.h"

namespace attn {

void copy_host_to_device(int device, void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  check_device_index(device);
  CachingAllocator::instance().check_range(device, dst, bytes, "copyHostToDevice destination");
  gpuStream_t stream = StreamRegistry::instance().current(device);
  DeviceGuard guard(device);
  // A captured copy would read a staging buffer that later copies reuse.
  throw_if_capturing(stream, "copying host data to the device (tensor(..., { device }), .to(device))",
                     "Create input tensors before the capture, and copy new values into them between replays.");
  if (HostStaging::instance().copy_to_device(device, dst, src, bytes, stream)) return;
  // Not staged: the source is pageable memory owned by JS, so wait until the runtime has read it.
  ATTN_CUDA_CHECK(gpuMemcpyAsync(dst, src, bytes, gpuMemcpyHostToDevice, stream));
  ATTN_CUDA_CHECK(gpuStreamSynchronize(stream));
}

void copy_device_to_host(int device, void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  check_device_index(device);
  CachingAllocator::instance().check_range(device, src, bytes, "copyDeviceToHost source");
  gpuStream_t stream = StreamRegistry::instance().current(device);
  DeviceGuard guard(device);
  throw_if_capturing(stream, "reading device memory on the host (toFloat32Array, toFloat64Array, .to('cpu'))",
                     "Read results after the capture ends, or after a replay.");
  ATTN_CUDA_CHECK(gpuMemcpyAsync(dst, src, bytes, gpuMemcpyDeviceToHost, stream));
  ATTN_CUDA_CHECK(gpuStreamSynchronize(stream));
}

HostStaging::Buffer* begin_device_to_host_async(int device, const void* src, std::size_t bytes) {
  check_device_index(device);
  CachingAllocator::instance().check_range(device, src, bytes, "copyDeviceToHostAsync source");
  gpuStream_t stream = StreamRegistry::instance().current(device);
  {
    DeviceGuard guard(device);
    throw_if_capturing(stream, "reading device memory on the host (copyDeviceToHostAsync)",
                       "Read results after the capture ends, or after a replay.");
  }
  return HostStaging::instance().begin_read(device, src, bytes, stream);
}

static bool overlaps(const void* a, const void* b, std::size_t bytes) {
  const auto x = reinterpret_cast<std::uintptr_t>(a), y = reinterpret_cast<std::uintptr_t>(b);
  return x < y + bytes && y < x + bytes;
}

void copy_device_to_device(int dst_device, void* dst, int src_device, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  check_device_index(dst_device);
  check_device_index(src_device);
  auto& allocator = CachingAllocator::instance();
  allocator.check_range(dst_device, dst, bytes, "copyDeviceToDevice destination");
  allocator.check_range(src_device, src, bytes, "copyDeviceToDevice source");
  auto& streams = StreamRegistry::instance();
  gpuStream_t dst_stream = streams.current(dst_device);
  if (dst_device == src_device) {
    if (dst != src && overlaps(dst, src, bytes)) {
      throw InvalidArgument(
          "copyDeviceToDevice: source and destination ranges overlap; copy through a "
          "temporary buffer",
          "ATTN_OVERLAP");
    }
    if (dst == src) return;
    DeviceGuard guard(dst_device);
    ATTN_CUDA_CHECK(gpuMemcpyAsync(dst, src, bytes, gpuMemcpyDeviceToDevice, dst_stream));
    return;
  }
  refuse_during_capture("a copy between two devices",
                        "A graph holds the work of one device; copy before or after the capture.");
  // Across devices: the copy runs on the destination's stream after the source's pending writes, and
  // the source's stream waits for the copy before it may reuse or overwrite the source.
  gpuStream_t src_stream = streams.current(src_device);
  gpuEvent_t src_ready = nullptr, copy_done = nullptr;
  {
    DeviceGuard guard(src_device);
    ATTN_CUDA_CHECK(gpuEventCreateWithFlags(&src_ready, gpuEventDisableTiming));
    ATTN_CUDA_CHECK(gpuEventRecord(src_ready, src_stream));
  }
  {
    DeviceGuard guard(dst_device);
    ATTN_CUDA_CHECK(gpuStreamWaitEvent(dst_stream, src_ready, 0));
    ATTN_CUDA_CHECK(gpuMemcpyPeerAsync(dst, dst_device, src, src_device, bytes, dst_stream));
    ATTN_CUDA_CHECK(gpuEventCreateWithFlags(&copy_done, gpuEventDisableTiming));
    ATTN_CUDA_CHECK(gpuEventRecord(copy_done, dst_stream));
  }
  {
    DeviceGuard guard(src_device);
    ATTN_CUDA_CHECK(gpuStreamWaitEvent(src_stream, copy_done, 0));
    // Destroying recorded events is safe: the runtime frees them once they complete.
    ATTN_CUDA_CHECK(gpuEventDestroy(src_ready));
  }
  DeviceGuard guard(dst_device);
  ATTN_CUDA_CHECK(gpuEventDestroy(copy_done));
}

void fill_bytes(int device, void* dst, int value, std::size_t bytes) {
  if (bytes == 0) return;
  check_device_index(device);
  if (value < 0 || value > 255) {
    throw InvalidArgument("fill: the byte value must be an integer in 0..255, got " + std::to_string(value),
                          "ATTN_BAD_VALUE");
  }
  CachingAllocator::instance().check_range(device, dst, bytes, "fill destination");
  gpuStream_t stream = StreamRegistry::instance().current(device);
  DeviceGuard guard(device);
  ATTN_CUDA_CHECK(gpuMemsetAsync(dst, value, bytes, stream));
}

void synchronize_device(int device) {
  check_device_index(device);
  refuse_during_capture("synchronize()", "Synchronize after the capture ends.");
  DeviceGuard guard(device);
  ATTN_CUDA_CHECK(gpuDeviceSynchronize());
}

}  // namespace attn
