// Copies and fills on a device's current stream. Device ranges are checked against the allocator's
// live blocks first, so a disposed or out-of-bounds range is an error, not a stray write.
#pragma once
#include <cstddef>

#include "host_staging.h"

namespace attn {

// Asynchronous: returns once `src` may be reused (it was staged or copied).
void copy_host_to_device(int device, void* dst, const void* src, std::size_t bytes);
// Returns once the bytes are in `dst`.
void copy_device_to_host(int device, void* dst, const void* src, std::size_t bytes);
// Enqueues device -> pinned staging on the current stream; the caller waits for the buffer's event,
// copies out of it and releases it (HostStaging::release_read).
HostStaging::Buffer* begin_device_to_host_async(int device, const void* src, std::size_t bytes);
// Asynchronous; across devices it is ordered after the source device's current stream as well.
void copy_device_to_device(int dst_device, void* dst, int src_device, const void* src, std::size_t bytes);
// Asynchronous: every byte of [dst, dst + bytes) becomes `value`.
void fill_bytes(int device, void* dst, int value, std::size_t bytes);
// Waits for all work on the device.
void synchronize_device(int device);

}  // namespace attn
