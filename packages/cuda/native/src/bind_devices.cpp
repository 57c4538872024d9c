// probe, deviceProperties, driverVersion, runtimeVersion.
#include <cstdio>

#include "bindings.h"
#include "devices.h"
#include "attn/napi_args.h"
#include "napi_errors.h"

namespace attn {
namespace {

// Never throws: { count } or { count: 0, error, errorName, errorNumber } for availability().
Napi::Value Probe(const Napi::CallbackInfo& info) {
  return guarded(info, [&]() -> Napi::Value {
    Napi::Env env = info.Env();
    const DeviceProbe& probe = probe_devices();
    Napi::Object o = Napi::Object::New(env);
    o.Set("count", Napi::Number::New(env, probe.count));
    o.Set("platform", Napi::String::New(env, ATTN_GPU_PLATFORM));
    if (probe.error != gpuSuccess) {
      o.Set("errorName", Napi::String::New(env, gpuGetErrorName(probe.error)));
      o.Set("error", Napi::String::New(env, gpuGetErrorString(probe.error)));
      o.Set("errorNumber", Napi::Number::New(env, static_cast<double>(probe.error)));
    }
    return o;
  });
}

Napi::Value DeviceProperties(const Napi::CallbackInfo& info) {
  return guarded(info, [&]() -> Napi::Value {
    Napi::Env env = info.Env();
    const int device = arg_int(info, 0, "device");
    const DeviceInfo d = device_info(device);
    Napi::Object o = Napi::Object::New(env);
    o.Set("index", Napi::Number::New(env, device));
    o.Set("name", Napi::String::New(env, d.name));
    o.Set("arch", Napi::String::New(env, d.arch));
    o.Set("major", Napi::Number::New(env, d.major));
    o.Set("minor", Napi::Number::New(env, d.minor));
    o.Set("multiProcessorCount", Napi::Number::New(env, d.multiprocessor_count));
    o.Set("totalMemoryBytes", Napi::Number::New(env, static_cast<double>(d.total_memory_bytes)));
    o.Set("l2CacheBytes", Napi::Number::New(env, d.l2_cache_bytes));
    o.Set("sharedMemoryPerBlock", Napi::Number::New(env, d.shared_memory_per_block));
    o.Set("sharedMemoryPerBlockOptin", Napi::Number::New(env, d.shared_memory_per_block_optin));
    o.Set("warpSize", Napi::Number::New(env, d.warp_size));
    o.Set("maxThreadsPerBlock", Napi::Number::New(env, d.max_threads_per_block));
    char pci[32];
    std::snprintf(pci, sizeof pci, "%04x:%02x:%02x.0", d.pci_domain, d.pci_bus, d.pci_device);
    o.Set("pciBusId", Napi::String::New(env, pci));
    return o;
  });
}

Napi::Value DriverVersion(const Napi::CallbackInfo& info) {
  return guarded(info, [&]() -> Napi::Value { return Napi::Number::New(info.Env(), driver_version()); });
}

Napi::Value RuntimeVersion(const Napi::CallbackInfo& info) {
  return guarded(info, [&]() -> Napi::Value { return Napi::Number::New(info.Env(), runtime_version()); });
}

}  // namespace

void bind_devices(Napi::Env env, Napi::Object exports) {
  exports.Set("probe", Napi::Function::New(env, Probe, "probe"));
  exports.Set("deviceProperties", Napi::Function::New(env, DeviceProperties, "deviceProperties"));
  exports.Set("driverVersion", Napi::Function::New(env, DriverVersion, "driverVersion"));
  exports.Set("runtimeVersion", Napi::Function::New(env, RuntimeVersion, "runtimeVersion"));
}

}  // namespace attn
