// N-API surface of cutlass_memeff.node: the argument arrays that src/launch-args.ts packs (native/src/abi.h,
// @attn/cuda's one argument ABI) become FwdParams / BwdParams; every C++ exception becomes a JS Error (code
// ATTN_MEMEFF_ARGS or ATTN_CUDA_ERROR).
#include <napi.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "attn/cuda_check.h"
#include "abi.h"
#include "attn/abi_args.h"
#include "dispatch.h"

namespace {

using memeff::BwdParams;
using memeff::FwdParams;
namespace abi = memeff::abi;

// The arrays' slots, read with the shared readers (attn/abi_slots.h): a value out of range is
// attn::InvalidArgument, which `guarded` reports as ATTN_MEMEFF_ARGS.
constexpr const char* kWho = "";
using attn::abi::ptr_at;

int64_t num_i64(const double* nums, int i, const char* what) { return attn::abi::num_i64(nums, i, kWho, what); }
int32_t num_i32(const double* nums, int i, const char* what, double lo = 0) {
  return static_cast<int32_t>(attn::abi::num_int(nums, i, kWho, what, lo, 2147483647.0));
}
bool num_flag(const double* nums, int i, const char* what) { return attn::abi::num_flag(nums, i, kWho, what); }

// A tensor's address and its [batch, head, row] strides (three consecutive number slots from `at`).
template <typename Ptr>
void get_tensor(const uint64_t* ptrs, int slot, const double* nums, int at, const char* what, Ptr& ptr,
                int64_t (&strides)[3]) {
  ptr = ptr_at<Ptr>(ptrs, slot);
  attn::abi::num_i64s(nums, at, kWho, what, strides);
}

void parse_fwd(const uint64_t* ptrs, const double* nums, FwdParams& p) {
  get_tensor(ptrs, abi::kQ, nums, abi::kQBatchStride, "q strides", p.q, p.q_stride);
  get_tensor(ptrs, abi::kK, nums, abi::kKBatchStride, "k strides", p.k, p.k_stride);
  get_tensor(ptrs, abi::kV, nums, abi::kVBatchStride, "v strides", p.v, p.v_stride);
  get_tensor(ptrs, abi::kOut, nums, abi::kOBatchStride, "out strides", p.o, p.o_stride);
  p.lse = ptr_at<float*>(ptrs, abi::kLse);
  p.batch = num_i32(nums, abi::kBatch, "batch");
  p.heads_q = num_i32(nums, abi::kHeadsQ, "headsQ");
  p.heads_kv = num_i32(nums, abi::kHeadsKv, "headsKV");
  p.group = p.heads_kv > 0 ? p.heads_q / p.heads_kv : 1;
  p.seq_q = num_i32(nums, abi::kSeqQ, "seqQ");
  p.seq_k = num_i32(nums, abi::kSeqK, "seqK");
  p.head_dim = num_i32(nums, abi::kHeadDim, "headDim");
  p.head_dim_v = num_i32(nums, abi::kHeadDimV, "headDimV");
  const double scale = nums[abi::kScale];
  p.scale = static_cast<float>(scale);
  // Causal and the window ([left, right], -1 unbounded: core's kernelWindow) as the bounds around the diagonal.
  const bool causal = num_flag(nums, abi::kCausal, "causal");
  p.lower_right = num_flag(nums, abi::kLowerRight, "lowerRight");
  const int64_t left = num_i64(nums, abi::kWindowLeft, "window left");
  const int64_t right = num_i64(nums, abi::kWindowRight, "window right");
  if (left < -1 || right < -1) throw std::invalid_argument("memeff-cuda: window sides must be >= -1");
  p.has_right = causal || right >= 0;
  p.window_right = causal ? 0 : right;  // causal with a right side: min(right, 0) = 0
  p.has_left = left >= 0;
  p.window_left = left >= 0 ? left : 0;
  const double softcap = nums[abi::kSoftcap];
  if (!(softcap >= 0)) throw std::invalid_argument("memeff-cuda: 'softcap' must be >= 0");
  p.softcap = static_cast<float>(softcap);
  p.softcap_in = softcap > 0 ? static_cast<float>(scale / softcap) : 0.f;
  p.alibi = ptr_at<const float*>(ptrs, abi::kAlibi);
  if (p.alibi != nullptr) attn::abi::num_i64s(nums, abi::kAlibiBatchStride, kWho, "alibi strides", p.alibi_stride);
  p.cu_seqlens_q = ptr_at<const int32_t*>(ptrs, abi::kCuSeqlensQ);
  p.cu_seqlens_k = ptr_at<const int32_t*>(ptrs, abi::kCuSeqlensK);
  if ((p.cu_seqlens_q != nullptr) != (p.cu_seqlens_k != nullptr))
    throw std::invalid_argument("memeff-cuda: varlen needs both cuSeqlensQ and cuSeqlensK");
  if (p.cu_seqlens_q != nullptr) {
    p.total_q = num_i32(nums, abi::kTotalQ, "totalQ");
    p.total_k = num_i32(nums, abi::kTotalK, "totalK");
  }
  p.seqused_k = ptr_at<const int32_t*>(ptrs, abi::kSequsedK);
  p.seq_k_rows = p.seq_k;
  memeff::set_bounds(p);
  // logsumexp (and the backward's D and dQ rows): dense [B, Hq, Sq], varlen [Hq, totalQ].
  p.lse_stride[0] = p.cu_seqlens_q != nullptr ? 0 : static_cast<int64_t>(p.heads_q) * p.seq_q;
  p.lse_stride[1] = p.cu_seqlens_q != nullptr ? p.total_q : p.seq_q;
  // The kind says whether there is a mask (dispatch.cu refuses a kind without a pointer).
  p.mask_kind = static_cast<memeff::MaskKind>(attn::abi::num_int(nums, abi::kMaskKind, kWho, "mask kind", 0, 2));
  if (p.mask_kind != memeff::MaskKind::kNone) {
    p.mask = ptr_at<const void*>(ptrs, abi::kMask);
    p.mask_dtype = num_i32(nums, abi::kMaskDtype, "mask dtype");
    attn::abi::num_i64s(nums, abi::kMaskBatchStride, kWho, "mask strides", p.mask_stride);
  }
  if (num_flag(nums, abi::kDropout, "dropout")) {
    p.dropout = true;
    p.dropout_threshold = static_cast<uint32_t>(
        attn::abi::num_int(nums, abi::kDropoutThreshold, kWho, "dropout threshold", 0, 4294967295.0));
    p.dropout_seed = ptrs[abi::kSeed];
    p.dropout_offset = static_cast<uint32_t>(num_i64(nums, abi::kDropoutOffset, "dropout offset"));
    p.dropout_keep_scale = static_cast<float>(nums[abi::kDropoutKeepScale]);
  }
  p.features = memeff::needs_features(p);
}

memeff::PathRequest get_path(const double* nums) {
  return static_cast<memeff::PathRequest>(attn::abi::num_int(nums, abi::kPath, kWho, "path", 0, 2));
}
int get_dtype(const double* nums) { return num_i32(nums, abi::kDtype, "dtype"); }
int get_device(const double* nums) { return num_i32(nums, abi::kDevice, "device"); }

template <typename Fn>
Napi::Value guarded(const Napi::CallbackInfo& info, Fn&& fn) {
  Napi::Env env = info.Env();
  try {
    return fn(env);
  } catch (const Napi::Error&) {
    throw;
  } catch (const attn::InvalidArgument& e) {
    Napi::Error err = Napi::Error::New(env, std::string("memeff-cuda: ") + e.what());
    err.Set("code", Napi::String::New(env, "ATTN_MEMEFF_ARGS"));
    throw err;
  } catch (const std::invalid_argument& e) {
    Napi::Error err = Napi::Error::New(env, e.what());
    err.Set("code", Napi::String::New(env, "ATTN_MEMEFF_ARGS"));
    throw err;
  } catch (const std::exception& e) {
    Napi::Error err = Napi::Error::New(env, e.what());
    err.Set("code", Napi::String::New(env, "ATTN_CUDA_ERROR"));
    throw err;
  }
}

// forward(ptrs, nums)
Napi::Value Forward(const Napi::CallbackInfo& info) {
  return guarded(info, [&](Napi::Env env) -> Napi::Value {
    const uint64_t* ptrs = attn::abi::ptrs_arg(info, 0, abi::kPtrCount, "addresses");
    const double* nums = attn::abi::nums_arg(info, 1, abi::kNumCount, "arguments");
    FwdParams p;
    parse_fwd(ptrs, nums, p);
    const auto stream = ptr_at<cudaStream_t>(ptrs, abi::kStream);
    return Napi::String::New(env, memeff::run_forward(p, get_dtype(nums), get_device(nums), stream, get_path(nums)));
  });
}

// The backward's four arrays (ptrs, nums, bptrs, bnums): the forward's and its own.
struct BwdArgs {
  const uint64_t* ptrs;
  const double* nums;
  const uint64_t* bptrs;
  const double* bnums;
};

BwdArgs bwd_args(const Napi::CallbackInfo& info) {
  return {attn::abi::ptrs_arg(info, 0, abi::kPtrCount, "addresses"),
          attn::abi::nums_arg(info, 1, abi::kNumCount, "arguments"),
          attn::abi::ptrs_arg(info, 2, abi::kBwdPtrCount, "backward addresses"),
          attn::abi::nums_arg(info, 3, abi::kBwdNumCount, "backward arguments")};
}

void parse_bwd(const BwdArgs& a, BwdParams& p) {
  parse_fwd(a.ptrs, a.nums, p);
  get_tensor(a.bptrs, abi::kDout, a.bnums, abi::kDoBatchStride, "dout strides", p.dout, p.do_stride);
  get_tensor(a.bptrs, abi::kDq, a.bnums, abi::kDqBatchStride, "dq strides", p.dq, p.dq_stride);
  get_tensor(a.bptrs, abi::kDk, a.bnums, abi::kDkBatchStride, "dk strides", p.dk, p.dk_stride);
  get_tensor(a.bptrs, abi::kDv, a.bnums, abi::kDvBatchStride, "dv strides", p.dv, p.dv_stride);
  p.dbias = ptr_at<void*>(a.bptrs, abi::kDbias);
  if (p.dbias != nullptr) {
    attn::abi::num_i64s(a.bnums, abi::kDbiasBatchStride, kWho, "dbias strides", p.dbias_stride);
    for (int i = 0; i < 4; ++i) p.dbias_size[i] = num_i32(a.bnums, abi::kDbiasBatches + i, "dbias sizes", 1);
  }
  p.deterministic = num_flag(a.bnums, abi::kDeterministic, "deterministic");
  // The query splits' dK / dV partials: rows as the keys, dense [B, Hk, Sk], varlen [Hk, totalK].
  const bool varlen = p.cu_seqlens_k != nullptr;
  p.kv_accum_stride[0] = varlen ? 0 : static_cast<int64_t>(p.heads_kv) * p.seq_k;
  p.kv_accum_stride[1] = varlen ? p.total_k : p.seq_k;
  p.kv_accum_rows = static_cast<int64_t>(p.heads_kv) * (varlen ? p.total_k : static_cast<int64_t>(p.batch) * p.seq_k);
}

// backwardPlan(ptrs, nums, bptrs, bnums): the workspace slots are not read.
Napi::Value BackwardPlan(const Napi::CallbackInfo& info) {
  return guarded(info, [&](Napi::Env env) -> Napi::Value {
    const BwdArgs a = bwd_args(info);
    BwdParams p;
    parse_bwd(a, p);
    const memeff::BwdPlan plan = memeff::plan_backward(p, get_dtype(a.nums), get_device(a.nums), get_path(a.nums));
    Napi::Object out = Napi::Object::New(env);
    out.Set("workspaceBytes", Napi::Number::New(env, static_cast<double>(plan.workspace_bytes)));
    out.Set("querySplits", Napi::Number::New(env, plan.query_splits));
    out.Set("tensorCores", Napi::Boolean::New(env, plan.mma || plan.tf32));
    out.Set("dbiasReduced", Napi::Boolean::New(env, plan.dbias_reduced));
    out.Set("dbiasAtomic", Napi::Boolean::New(env, plan.dbias_atomic));
    out.Set("dbiasMode", Napi::String::New(env, plan.dbias_mode));
    return out;
  });
}

// backward(ptrs, nums, bptrs, bnums)
Napi::Value Backward(const Napi::CallbackInfo& info) {
  return guarded(info, [&](Napi::Env env) -> Napi::Value {
    const BwdArgs a = bwd_args(info);
    BwdParams p;
    parse_bwd(a, p);
    void* workspace = ptr_at<void*>(a.bptrs, abi::kWorkspace);
    const auto bytes = static_cast<size_t>(
        attn::abi::num_int(a.bnums, abi::kWorkspaceBytes, kWho, "workspace bytes", 0, 9007199254740991.0));
    const auto ran = memeff::run_backward(p, get_dtype(a.nums), get_device(a.nums), get_path(a.nums), workspace, bytes,
                                          ptr_at<cudaStream_t>(a.ptrs, abi::kStream));
    Napi::Array names = Napi::Array::New(env, ran.size());
    for (size_t i = 0; i < ran.size(); ++i) names.Set(static_cast<uint32_t>(i), Napi::String::New(env, ran[i]));
    return names;
  });
}

Napi::Value DeviceSupport(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  try {
    if (info.Length() < 1 || !info[0].IsNumber()) throw std::invalid_argument("memeff-cuda: expected a device index");
    return Napi::String::New(env, memeff::device_support(info[0].As<Napi::Number>().Int32Value()));
  } catch (const std::exception& e) {
    throw Napi::Error::New(env, e.what());
  }
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("forward", Napi::Function::New(env, Forward, "forward"));
  exports.Set("backwardPlan", Napi::Function::New(env, BackwardPlan, "backwardPlan"));
  exports.Set("backward", Napi::Function::New(env, Backward, "backward"));
  exports.Set("deviceSupport", Napi::Function::New(env, DeviceSupport, "deviceSupport"));
  Napi::Array names = Napi::Array::New(env);
  const auto all = memeff::kernel_names();
  for (size_t i = 0; i < all.size(); ++i) names.Set(static_cast<uint32_t>(i), Napi::String::New(env, all[i]));
  exports.Set("kernels", names);
  exports.Set("archs", Napi::String::New(env, ATTN_CUDA_ARCHS_STRING));
  int runtime = 0;
  cudaRuntimeGetVersion(&runtime);
  exports.Set("cudaRuntimeVersion", Napi::Number::New(env, runtime));
  return exports;
}

}  // namespace

NODE_API_MODULE(cutlass_memeff, Init)
