// Test-only functions: attn/philox.h on the device and on the host, for bit-equality tests against
// core's TypeScript Philox.
#include <cstring>

#include "attn/philox.h"
#include "bindings.h"
#include "devices.h"
#include "attn/napi_args.h"
#include "napi_errors.h"
#include "philox_fill.h"

namespace attn {
namespace {

// philoxRaw(device, inputs: Uint32Array of 6 words per item) -> Uint32Array of 4 words per item.
Napi::Value PhiloxRaw(const Napi::CallbackInfo& info) {
  return guarded(info, [&]() -> Napi::Value {
    const int device = arg_int(info, 0, "device");
    Napi::Uint32Array in = arg_typed_array<Napi::Uint32Array>(info, 1, "inputs", napi_uint32_array, "Uint32Array");
    check_device_index(device);
    std::vector<std::uint32_t> inputs(in.Data(), in.Data() + in.ElementLength());
    const std::vector<std::uint32_t> out = philox_raw_on_device(device, inputs);
    Napi::Uint32Array result = Napi::Uint32Array::New(info.Env(), out.size());
    if (!out.empty()) std::memcpy(result.Data(), out.data(), out.size() * sizeof(std::uint32_t));
    return result;
  });
}

// philoxRawHost(inputs) -> the same as philoxRaw, computed by attn/philox.h on the CPU (its host
// path), so the twin is checked against core's TypeScript on machines without a GPU too.
Napi::Value PhiloxRawHost(const Napi::CallbackInfo& info) {
  return guarded(info, [&]() -> Napi::Value {
    Napi::Uint32Array in = arg_typed_array<Napi::Uint32Array>(info, 0, "inputs", napi_uint32_array, "Uint32Array");
    if (in.ElementLength() % 6 != 0)
      throw InvalidArgument("philoxRawHost: inputs must hold 6 words per item", "ATTN_BAD_SIZE");
    const std::size_t n = in.ElementLength() / 6;
    Napi::Uint32Array out = Napi::Uint32Array::New(info.Env(), 4 * n);
    const std::uint32_t* p = in.Data();
    std::uint32_t* q = out.Data();
    for (std::size_t t = 0; t < n; ++t, p += 6, q += 4) {
      const Philox4 r = philox4x32_10(Philox4{p[0], p[1], p[2], p[3]}, p[4], p[5]);
      q[0] = r.x;
      q[1] = r.y;
      q[2] = r.z;
      q[3] = r.w;
    }
    return out;
  });
}

// dropoutWords(device, seed: bigint, offset, bhCount, seqQ, seqK, threshold) -> { words, keep }
Napi::Value DropoutWordsFn(const Napi::CallbackInfo& info) {
  return guarded(info, [&]() -> Napi::Value {
    const int device = arg_int(info, 0, "device");
    const std::uint64_t seed = arg_u64(info, 1, "seed");
    const std::uint32_t offset = arg_u32(info, 2, "offset");
    const std::uint32_t bh = arg_u32(info, 3, "bhCount");
    const std::uint32_t sq = arg_u32(info, 4, "seqQ");
    const std::uint32_t sk = arg_u32(info, 5, "seqK");
    const std::uint32_t threshold = arg_u32(info, 6, "threshold");
    check_device_index(device);
    const DropoutWords r = dropout_words_on_device(device, seed, offset, bh, sq, sk, threshold);
    Napi::Env env = info.Env();
    Napi::Uint32Array words = Napi::Uint32Array::New(env, r.words.size());
    Napi::Uint8Array keep = Napi::Uint8Array::New(env, r.keep.size());
    if (!r.words.empty()) {
      std::memcpy(words.Data(), r.words.data(), r.words.size() * sizeof(std::uint32_t));
      std::memcpy(keep.Data(), r.keep.data(), r.keep.size());
    }
    Napi::Object o = Napi::Object::New(env);
    o.Set("words", words);
    o.Set("keep", keep);
    return o;
  });
}

}  // namespace

void bind_testing(Napi::Env env, Napi::Object exports) {
  exports.Set("philoxRaw", Napi::Function::New(env, PhiloxRaw, "philoxRaw"));
  exports.Set("philoxRawHost", Napi::Function::New(env, PhiloxRawHost, "philoxRawHost"));
  exports.Set("dropoutWords", Napi::Function::New(env, DropoutWordsFn, "dropoutWords"));
}

}  // namespace attn
