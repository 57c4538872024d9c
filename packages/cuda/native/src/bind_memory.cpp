// allocate, free, recordStream, memoryStats, resetPeakMemoryStats, emptyCache, copies, fill,
// synchronize, and allocatorApi (the allocator as a C table for kernel addons, attn/allocator_api.h).
#include "attn/allocator_api.h"
#include "bindings.h"
#include "caching_allocator.h"
#include "copies.h"
#include "devices.h"
#include "handles.h"
#include "host_staging.h"
#include "attn/napi_args.h"
#include "napi_errors.h"
#include "streams.h"

namespace attn {
namespace {

// allocate(device, bytes): bigint address (0n for 0 bytes), on the device's current stream.
Napi::Value Allocate(const Napi::CallbackInfo& info) {
  return guarded(info, [&]() -> Napi::Value {
    const int device = arg_int(info, 0, "device");
    const std::size_t bytes = arg_size(info, 1, "bytes");
    check_device_index(device);
    gpuStream_t stream = StreamRegistry::instance().current(device);
    return to_bigint(info.Env(), CachingAllocator::instance().allocate(device, bytes, stream));
  });
}

Napi::Value Free(const Napi::CallbackInfo& info) {
  return guarded(info, [&]() -> Napi::Value {
    const int device = arg_int(info, 0, "device");
    void* ptr = arg_pointer(info, 1, "pointer");
    check_device_index(device);
    CachingAllocator::instance().free(device, ptr);
    return info.Env().Undefined();
  });
}

// recordStream(device, pointer, stream): the buffer is also used on `stream`.
Napi::Value RecordStream(const Napi::CallbackInfo& info) {
  return guarded(info, [&]() -> Napi::Value {
    const int device = arg_int(info, 0, "device");
    void* ptr = arg_pointer(info, 1, "pointer");
    gpuStream_t stream = stream_from_u64(arg_u64(info, 2, "stream"));
    check_device_index(device);
    const int stream_device = StreamRegistry::instance().device_of(stream);
    if (stream_device != device) {
      throw InvalidArgument("recordStream: the stream belongs to device " + std::to_string(stream_device) +
                                ", the buffer to device " + std::to_string(device),
                            "ATTN_DEVICE_MISMATCH");
    }
    CachingAllocator::instance().record_stream(device, ptr, stream);
    return info.Env().Undefined();
  });
}

// The C table of attn/allocator_api.h: the same allocator and streams as allocate() and free(), with every
// exception caught (the caller is another shared object; nothing may unwind into it).
int api_current_stream(int device, void** stream) {
  try {
    check_device_index(device);
    *stream = static_cast<void*>(StreamRegistry::instance().current(device));
    return 0;
  } catch (...) {
    return 1;
  }
}

void* api_allocate(int device, std::size_t bytes, void* stream) {
  try {
    if (bytes == 0) return nullptr;
    check_device_index(device);
    CachingAllocator& a = CachingAllocator::instance();
    if (a.capturing(device)) return nullptr;
    return a.allocate(device, bytes, static_cast<gpuStream_t>(stream));
  } catch (...) {
    return nullptr;
  }
}

int api_free(int device, void* ptr) {
  try {
    CachingAllocator::instance().free(device, ptr);
    return 0;
  } catch (...) {
    return 1;
  }
}

const AllocatorApi kAllocatorApi = {kAllocatorApiVersion, sizeof(AllocatorApi), api_current_stream, api_allocate,
                                    api_free};

// allocatorApi(): the table's address (a bigint), for kernel addons.
Napi::Value AllocatorApiAddress(const Napi::CallbackInfo& info) { return to_bigint(info.Env(), &kAllocatorApi); }

Napi::Value MemoryStatsOf(const Napi::CallbackInfo& info) {
  return guarded(info, [&]() -> Napi::Value {
    const int device = arg_int(info, 0, "device");
    check_device_index(device);
    return stats_to_js(info.Env(), CachingAllocator::instance().stats(device));
  });
}

Napi::Value ResetPeakMemoryStats(const Napi::CallbackInfo& info) {
  return guarded(info, [&]() -> Napi::Value {
    const int device = arg_int(info, 0, "device");
    check_device_index(device);
    CachingAllocator::instance().reset_peak_stats(device);
    return info.Env().Undefined();
  });
}

// emptyCache(device): -1 for every device. Also frees idle pinned staging buffers.
Napi::Value EmptyCache(const Napi::CallbackInfo& info) {
  return guarded(info, [&]() -> Napi::Value {
    const int device = arg_int(info, 0, "device");
    if (device >= 0) check_device_index(device);
    CachingAllocator::instance().empty_cache(device);
    HostStaging::instance().release_idle();
    return info.Env().Undefined();
  });
}

// copyHostToDevice(device, dstPointer, src: Uint8Array)
Napi::Value CopyHostToDevice(const Napi::CallbackInfo& info) {
  return guarded(info, [&]() -> Napi::Value {
    const int device = arg_int(info, 0, "device");
    void* dst = arg_pointer(info, 1, "dst");
    Napi::Uint8Array src = arg_bytes(info, 2, "src");
    copy_host_to_device(device, dst, src.Data(), src.ByteLength());
    return info.Env().Undefined();
  });
}

// copyDeviceToHost(device, dst: Uint8Array, srcPointer)
Napi::Value CopyDeviceToHost(const Napi::CallbackInfo& info) {
  return guarded(info, [&]() -> Napi::Value {
    const int device = arg_int(info, 0, "device");
    Napi::Uint8Array dst = arg_bytes(info, 1, "dst");
    void* src = arg_pointer(info, 2, "src");
    copy_device_to_host(device, dst.Data(), src, dst.ByteLength());
    return info.Env().Undefined();
  });
}

// copyDeviceToDevice(dstDevice, dstPointer, srcDevice, srcPointer, bytes)
Napi::Value CopyDeviceToDevice(const Napi::CallbackInfo& info) {
  return guarded(info, [&]() -> Napi::Value {
    const int dst_device = arg_int(info, 0, "dstDevice");
    void* dst = arg_pointer(info, 1, "dst");
    const int src_device = arg_int(info, 2, "srcDevice");
    void* src = arg_pointer(info, 3, "src");
    const std::size_t bytes = arg_size(info, 4, "bytes");
    copy_device_to_device(dst_device, dst, src_device, src, bytes);
    return info.Env().Undefined();
  });
}

// fill(device, pointer, byteValue, bytes)
Napi::Value Fill(const Napi::CallbackInfo& info) {
  return guarded(info, [&]() -> Napi::Value {
    const int device = arg_int(info, 0, "device");
    void* dst = arg_pointer(info, 1, "dst");
    const int value = arg_int(info, 2, "byteValue");
    const std::size_t bytes = arg_size(info, 3, "bytes");
    fill_bytes(device, dst, value, bytes);
    return info.Env().Undefined();
  });
}

Napi::Value Synchronize(const Napi::CallbackInfo& info) {
  return guarded(info, [&]() -> Napi::Value {
    synchronize_device(arg_int(info, 0, "device"));
    return info.Env().Undefined();
  });
}

}  // namespace

void bind_memory(Napi::Env env, Napi::Object exports) {
  exports.Set("allocate", Napi::Function::New(env, Allocate, "allocate"));
  exports.Set("free", Napi::Function::New(env, Free, "free"));
  exports.Set("recordStream", Napi::Function::New(env, RecordStream, "recordStream"));
  exports.Set("allocatorApi", Napi::Function::New(env, AllocatorApiAddress, "allocatorApi"));
  exports.Set("memoryStats", Napi::Function::New(env, MemoryStatsOf, "memoryStats"));
  exports.Set("resetPeakMemoryStats", Napi::Function::New(env, ResetPeakMemoryStats, "resetPeakMemoryStats"));
  exports.Set("emptyCache", Napi::Function::New(env, EmptyCache, "emptyCache"));
  exports.Set("copyHostToDevice", Napi::Function::New(env, CopyHostToDevice, "copyHostToDevice"));
  exports.Set("copyDeviceToHost", Napi::Function::New(env, CopyDeviceToHost, "copyDeviceToHost"));
  exports.Set("copyDeviceToDevice", Napi::Function::New(env, CopyDeviceToDevice, "copyDeviceToDevice"));
  exports.Set("fill", Napi::Function::New(env, Fill, "fill"));
  exports.Set("synchronize", Napi::Function::New(env, Synchronize, "synchronize"));
}

}  // namespace attn
