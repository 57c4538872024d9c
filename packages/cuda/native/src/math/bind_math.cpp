// The cuda-math backend's functions on @attn/cuda's addon: mathForward and mathBackward queue the
// kernels on the device's current stream (the one currentStream() names) and return the kernel
// instances they ran; mathLimits, mathKernels and mathDeviceSupport describe the build. Built into
// attn_cuda.node only (not into @attn/rocm's build of the runtime sources).
#include <memory>
#include <string>
#include <vector>

#include "attn/cuda_check.h"
#include "copies.h"
#include "device_buffer.h"
#include "device_guard.h"
#include "devices.h"
#include "attn/kv_append_abi.h"
#include "math_args.h"
#include "math_kernels.h"
#include "math_limits.h"
#include "attn/napi_args.h"
#include "napi_errors.h"
#include "streams.h"

namespace attn {
namespace {

Napi::Object args_object(const Napi::CallbackInfo& info) {
  if (info.Length() < 1 || !info[0].IsObject()) {
    throw InvalidArgument("cuda-math: expected one argument object", "ATTN_BAD_ARGUMENT");
  }
  return info[0].As<Napi::Object>();
}

// The host arrays of a call (offsets, key counts, block table), copied to device buffers on `stream`. The buffers
// are freed stream-ordered when the call returns: reused only by work queued after its kernels.
struct Uploads {
  std::unique_ptr<DeviceBuffer> cu_q, cu_k, seqused_k, block_table, key_start;
};

const int32_t* upload(int device, gpuStream_t stream, const std::vector<int32_t>& host,
                      std::unique_ptr<DeviceBuffer>& into) {
  if (host.empty()) return nullptr;
  const size_t bytes = host.size() * sizeof(int32_t);
  into = std::make_unique<DeviceBuffer>(device, bytes, stream);
  copy_host_to_device(device, into->as<void>(), host.data(), bytes);
  return into->as<const int32_t>();
}

void upload_all(const math::CallInfo& call, math::Params& p, gpuStream_t stream, Uploads& u) {
  p.cu_q = upload(call.device, stream, call.cu_q, u.cu_q);
  p.cu_k = upload(call.device, stream, call.cu_k, u.cu_k);
  p.seqused_k = upload(call.device, stream, call.seqused_k, u.seqused_k);
  p.block_table = upload(call.device, stream, call.block_table, u.block_table);
  p.key_start = upload(call.device, stream, call.key_start, u.key_start);
}

Napi::Value MathForward(const Napi::CallbackInfo& info) {
  return guarded(info, [&]() -> Napi::Value {
    math::Params p;
    const math::CallInfo call = math::read_forward(args_object(info), p);
    gpuStream_t stream = StreamRegistry::instance().current(call.device);
    DeviceGuard guard(call.device);
    Uploads uploads;
    upload_all(call, p, stream, uploads);
    return Napi::String::New(info.Env(), math::run_forward(p, call.dtype, call.acc64, stream));
  });
}

Napi::Value MathBackward(const Napi::CallbackInfo& info) {
  return guarded(info, [&]() -> Napi::Value {
    math::BwdParams p;
    const math::CallInfo call = math::read_backward(args_object(info), p);
    gpuStream_t stream = StreamRegistry::instance().current(call.device);
    DeviceGuard guard(call.device);
    Uploads uploads;
    upload_all(call, p, stream, uploads);
    // (max, 1 / sum, delta) per row, in the accumulate type.
    const size_t stats_bytes = static_cast<size_t>(3 * p.rows) * (call.acc64 ? sizeof(double) : sizeof(float));
    DeviceBuffer stats(call.device, stats_bytes, stream);
    p.stats = stats.as<void>();
    const std::vector<std::string> ran = math::run_backward(p, call.dtype, call.acc64, stream);
    Napi::Array names = Napi::Array::New(info.Env(), ran.size());
    for (size_t i = 0; i < ran.size(); ++i) names.Set(static_cast<uint32_t>(i), Napi::String::New(info.Env(), ran[i]));
    return names;
  });
}

// kvAppend(ptrs: BigUint64Array, nums: Float64Array, device): the kv-cache append and rotary kernel
// (attn/kv_append.cuh) queued on the stream ptrs names; the arrays as src/kv-append.ts packs them.
Napi::Value KvAppend(const Napi::CallbackInfo& info) {
  return guarded(info, [&]() -> Napi::Value {
    const auto ptrs = arg_typed_array<Napi::BigUint64Array>(info, 0, "ptrs", napi_biguint64_array, "BigUint64Array");
    const auto nums = arg_typed_array<Napi::Float64Array>(info, 1, "nums", napi_float64_array, "Float64Array");
    const int device = arg_int(info, 2, "device");
    if (ptrs.ElementLength() != kv::kPtrCount || nums.ElementLength() != kv::kNumCount) {
      throw InvalidArgument("cuda-math: kvAppend takes " + std::to_string(kv::kPtrCount) + " pointers and " +
                                std::to_string(kv::kNumCount) + " numbers (src/kv-append.ts)",
                            "ATTN_BAD_ARGUMENT");
    }
    check_device_index(device);
    DeviceGuard guard(device);
    math::run_kv_append(ptrs.Data(), nums.Data());
    return info.Env().Undefined();
  });
}

Napi::Value MathLimits(const Napi::CallbackInfo& info) {
  return guarded(info, [&]() -> Napi::Value {
    Napi::Env env = info.Env();
    Napi::Object o = Napi::Object::New(env);
    o.Set("maxHeadDim", Napi::Number::New(env, math::kMaxHeadDim));
    o.Set("maxSeq", Napi::Number::New(env, static_cast<double>(math::kMaxSeq)));
    o.Set("threads", Napi::Number::New(env, math::kThreads));
    o.Set("keyTile", Napi::Number::New(env, math::kKeyTile));
    o.Set("keyKernelSmemBytes", Napi::Number::New(env, math::kKeyKernelSmemBytes));
    return o;
  });
}

// keyTile(headDim, headDimV, acc64): keys per block of the backward's key kernel.
Napi::Value MathKeyTile(const Napi::CallbackInfo& info) {
  return guarded(info, [&]() -> Napi::Value {
    const int d = arg_int(info, 0, "headDim");
    const int dv = arg_int(info, 1, "headDimV");
    const bool acc64 = arg_bool(info, 2, "acc64");
    if (d < 1 || d > math::kMaxHeadDim || dv < 0 || dv > math::kMaxHeadDim) {
      throw InvalidArgument("cuda-math: head dims must lie in [1, " + std::to_string(math::kMaxHeadDim) + "]",
                            "ATTN_BAD_ARGUMENT");
    }
    return Napi::Number::New(info.Env(), math::key_tile(d, dv, acc64));
  });
}

Napi::Value MathKernels(const Napi::CallbackInfo& info) {
  return guarded(info, [&]() -> Napi::Value {
    const std::vector<std::string> names = math::kernel_names();
    Napi::Array out = Napi::Array::New(info.Env(), names.size());
    for (size_t i = 0; i < names.size(); ++i)
      out.Set(static_cast<uint32_t>(i), Napi::String::New(info.Env(), names[i]));
    return out;
  });
}

// '' when the addon has code for the device, else why not (and how to fix it).
Napi::Value MathDeviceSupport(const Napi::CallbackInfo& info) {
  return guarded(info, [&]() -> Napi::Value {
    const int device = arg_int(info, 0, "device");
    check_device_index(device);
    DeviceGuard guard(device);
    cudaFuncAttributes attr{};
    const cudaError_t err = cudaFuncGetAttributes(&attr, math::forward_probe());
    std::string why;
    if (err == cudaErrorInvalidDeviceFunction || err == cudaErrorNoKernelImageForDevice) {
      (void)cudaGetLastError();  // not sticky: clear it
      const DeviceInfo d = device_info(device);
      why = "the @attn/cuda addon was built for " ATTN_CUDA_ARCHS_STRING " and has no code for sm_" +
            std::to_string(d.major) + std::to_string(d.minor) + "; rebuild it with ATTN_CUDA_ARCHS including " +
            std::to_string(d.major) + std::to_string(d.minor) + " (npx @attn/native build @attn/cuda)";
    } else {
      ATTN_CUDA_CHECK(err);
    }
    return Napi::String::New(info.Env(), why);
  });
}

}  // namespace

void bind_math(Napi::Env env, Napi::Object exports) {
  exports.Set("mathForward", Napi::Function::New(env, MathForward, "mathForward"));
  exports.Set("mathBackward", Napi::Function::New(env, MathBackward, "mathBackward"));
  exports.Set("kvAppend", Napi::Function::New(env, KvAppend, "kvAppend"));
  exports.Set("mathLimits", Napi::Function::New(env, MathLimits, "mathLimits"));
  exports.Set("mathKeyTile", Napi::Function::New(env, MathKeyTile, "mathKeyTile"));
  exports.Set("mathKernels", Napi::Function::New(env, MathKernels, "mathKernels"));
  exports.Set("mathDeviceSupport", Napi::Function::New(env, MathDeviceSupport, "mathDeviceSupport"));
}

}  // namespace attn
