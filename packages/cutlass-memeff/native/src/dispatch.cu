#include "dispatch.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <unordered_map>

#include "attn/cuda_check.h"
#include "bwd/mma_bwd_traits.h"
#include "bwd/tf32_bwd_traits.h"
#include "fwd/mma_traits.h"
#include "fwd/simt_traits.h"
#include "fwd/tf32_traits.h"
#include "launch/launchers.h"

namespace memeff {
namespace {

const KernelEntry kKernels[] = {
#include "generated/kernel_table.inc"
};

const KernelEntry& find_kernel(Family f, int dtype, int bucket) {
  for (const KernelEntry& e : kKernels) {
    if (e.family == f && e.dtype == dtype && e.bucket == bucket) return e;
  }
  throw std::invalid_argument("memeff-cuda: no kernel instantiated for family " + std::to_string(static_cast<int>(f)) +
                              ", dtype " + std::to_string(dtype) + ", bucket " + std::to_string(bucket));
}

struct DeviceInfo {
  int major = 0, minor = 0, sm_count = 0;
  int smem_optin = 0;  // bytes of shared memory one block may opt in to
};

DeviceInfo device_info(int device) {
  static std::mutex mu;
  static std::unordered_map<int, DeviceInfo> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(device);
  if (it != cache.end()) return it->second;
  DeviceInfo info;
  ATTN_CUDA_CHECK(cudaDeviceGetAttribute(&info.major, cudaDevAttrComputeCapabilityMajor, device));
  ATTN_CUDA_CHECK(cudaDeviceGetAttribute(&info.minor, cudaDevAttrComputeCapabilityMinor, device));
  ATTN_CUDA_CHECK(cudaDeviceGetAttribute(&info.sm_count, cudaDevAttrMultiProcessorCount, device));
  ATTN_CUDA_CHECK(cudaDeviceGetAttribute(&info.smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  cache.emplace(device, info);
  return info;
}

// The virtual arch a kernel was compiled from on this device (0: no image for it).
int kernel_ptx_version(const KernelEntry& e, int device) {
  static std::mutex mu;
  static std::unordered_map<int64_t, int> cache;
  const int64_t key = (static_cast<int64_t>(device) << 32) | static_cast<int64_t>(&e - kKernels);
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  cudaFuncAttributes attr{};
  const cudaError_t err = cudaFuncGetAttributes(&attr, e.probe());
  int v = 0;
  if (err == cudaSuccess) {
    v = attr.ptxVersion;
  } else if (err == cudaErrorInvalidDeviceFunction || err == cudaErrorNoKernelImageForDevice) {
    (void)cudaGetLastError();  // not sticky: clear it
  } else {
    ATTN_CUDA_CHECK(err);
  }
  cache.emplace(key, v);
  return v;
}

class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    ATTN_CUDA_CHECK(cudaGetDevice(&prev_));
    if (prev_ != device) ATTN_CUDA_CHECK(cudaSetDevice(device));
  }
  ~DeviceGuard() { cudaSetDevice(prev_); }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int prev_ = 0;
};

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("memeff-cuda: " + what);
}

// The checks TS made first, again, cheaply: a bad call throws instead of faulting.
void check_common(const FwdParams& p, int dtype) {
  require(dtype == kF32 || dtype == kF16 || dtype == kBF16, "dtype must be float32, float16 or bfloat16");
  require(p.q && p.k && p.v && p.o && p.lse, "null tensor pointer");
  require(p.batch > 0 && p.heads_q > 0 && p.heads_kv > 0 && p.seq_q > 0 && p.seq_k > 0 && p.head_dim > 0 && p.head_dim_v > 0,
          "every size must be positive");
  require(p.heads_q % p.heads_kv == 0 && p.group == p.heads_q / p.heads_kv, "heads_q must be a multiple of heads_kv");
  require(p.mask_kind == MaskKind::kNone || p.mask != nullptr, "mask pointer is null");
  require(p.mask_kind != MaskKind::kBool || p.mask_dtype == kBoolean, "a boolean mask must have dtype bool");
  require(p.mask_kind != MaskKind::kAdditive || p.mask_dtype == kF32 || p.mask_dtype == dtype,
          "an additive mask must be float32 or the query's dtype");  // core's rule; the staged tiles rely on it
  require(!p.dropout || p.dropout_keep_scale >= 1.f, "dropout keep scale must be 1 / (1 - p)");
  require(static_cast<int64_t>(p.seq_q) <= 65535LL * 32, "seq_q too large for the grid");
  require((p.cu_seqlens_q == nullptr) == (p.cu_seqlens_k == nullptr), "varlen needs both cu_seqlens_q and cu_seqlens_k");
  require(p.cu_seqlens_q == nullptr || (p.mask_kind == MaskKind::kNone && p.total_q > 0 && p.total_k >= 0 && p.q_stride[0] == 0 &&
                                        p.k_stride[0] == 0 && p.v_stride[0] == 0 && p.o_stride[0] == 0),
          "varlen takes packed [total, H, D] tensors (batch strides 0) and no mask");
  require(!p.has_left || p.window_left >= 0, "the window's left side must be >= 0");
  require(p.softcap >= 0.f && p.softcap < INFINITY, "softcap must be finite and >= 0 (0: off)");
  require(p.features == needs_features(p), "features must match the call (needs_features)");
}

bool aligned16(const void* ptr) { return (reinterpret_cast<uintptr_t>(ptr) & 15u) == 0; }
bool strides_mult8(const int64_t (&s)[3]) { return s[0] % 8 == 0 && s[1] % 8 == 0 && s[2] % 8 == 0; }

// Shared memory a backward main kernel will ask for (key_split_smem_bytes), counting the GQA presum slots
// wherever a mask meets a group > 1 (the plan takes them only with a dbias: an upper bound).
template <typename Tr>
int bwd_smem_bytes(const FwdParams& p) {
  const bool mask = p.mask_kind != MaskKind::kNone;
  return key_split_smem_bytes<Tr>(mask, mask && p.group > 1);
}
std::string smem_refusal(int need, int have) {
  return "needs " + std::to_string(need / 1024) + " KB of shared memory per block, the device allows " + std::to_string(have / 1024);
}

// The side-by-side switches below: the newer form unless the variable is "0".
bool on_unless_zero(const char* name) {
  const char* e = std::getenv(name);
  return e == nullptr || std::strcmp(e, "0") != 0;
}

// The tensor-core forward's KernelEntry bucket for this call: calls with features take the buckets' feature kernels.
int mma_fwd_kernel_dim(const FwdParams& p) { return mma_fwd_head_dim(p.head_dim, p.head_dim_v, !p.features); }

int mma_bwd_bucket(const FwdParams& p) {
  const int d = std::max(p.head_dim, p.head_dim_v);
  return d <= 64 ? 64 : d <= 128 ? 128 : 256;
}

// Why a tensor-core kernel cannot take this call (empty: it can). `extra` are further operands it
// reads with cp.async (the forward's output, the backward's dO).
std::string mma_refusal(const FwdParams& p, int dtype, int device, int max_head_dim, Family family,
                        const void* extra_ptr, const int64_t (&extra_stride)[3]) {
  if (dtype != kF16 && dtype != kBF16) return "fp32 runs on the FMA path";
  const DeviceInfo d = device_info(device);
  if (d.major < 8) return "tensor-core path needs sm80+";
  if (p.head_dim % 8 || p.head_dim_v % 8) return "head dims not multiples of 8";
  if (std::max(p.head_dim, p.head_dim_v) > max_head_dim) return "head dim above " + std::to_string(max_head_dim);
  if (!aligned16(p.q) || !aligned16(p.k) || !aligned16(p.v) || !aligned16(extra_ptr)) return "pointers not 16-byte aligned";
  if (!strides_mult8(p.q_stride) || !strides_mult8(p.k_stride) || !strides_mult8(p.v_stride) || !strides_mult8(extra_stride)) {
    return "strides not multiples of 8 elements";
  }
  const int bucket = family == Family::kFwdMma ? mma_fwd_kernel_dim(p) : mma_bwd_bucket(p);
  const KernelEntry& e = find_kernel(family, dtype, bucket);
  if (kernel_ptx_version(e, device) < 80) return "addon built without sm80+ code for this device";
  if (family == Family::kBwdMma) {
    const int need = bucket == 64    ? bwd_smem_bytes<MmaBwdTraits<64>>(p)
                     : bucket == 128 ? bwd_smem_bytes<MmaBwdTraits<128>>(p)
                                     : bwd_smem_bytes<MmaBwdTraits<256>>(p);
    if (need > d.smem_optin) return smem_refusal(need, d.smem_optin);
  }
  return "";
}

// fp32 forward on tensor cores (3xTF32). ATTN_MEMEFF_FP32_TC=1 selects it, =0 the FMA kernel, on
// every arch; unset, it is the default on majors [kFp32TcDefaultMinMajor, kFp32TcDefaultMaxMajor].
// On by default on Hopper since v5 passed the whole conformance suite's fp32 cases with it on an H200
// (46/46, sq17-sk1 on three seeds; 1.5-2x the FMA kernel's speed, NOTES.md v5 measured); sm80-sm89 keep
// FMA until a GPU of theirs runs the same check. Read once.
constexpr int kFp32TcDefaultMinMajor = 9;  // 0: off by default everywhere
constexpr int kFp32TcDefaultMaxMajor = 9;
int fp32_tensor_cores_env() {  // 1 on, 0 off, -1 unset (per-arch default)
  static const int v = [] {
    const char* e = std::getenv("ATTN_MEMEFF_FP32_TC");
    if (e == nullptr || *e == 0) return -1;
    return std::strcmp(e, "0") == 0 ? 0 : std::strcmp(e, "1") == 0 ? 1 : -1;
  }();
  return v;
}
bool fp32_tensor_cores_enabled(int major) {
  const int env = fp32_tensor_cores_env();
  if (env >= 0) return env == 1;
  return kFp32TcDefaultMinMajor > 0 && major >= kFp32TcDefaultMinMajor && major <= kFp32TcDefaultMaxMajor;
}

// ATTN_MEMEFF_MASK_FREE=0: calls without a mask run the tensor-core kernels built with mask code
// (FwdParams::mask_free_kernels; v5's behaviour), to time the two side by side on one build. Read once.
bool mask_free_kernels_enabled() {
  static const bool v = on_unless_zero("ATTN_MEMEFF_MASK_FREE");
  return v;
}

// ATTN_MEMEFF_MASK_FAST=0: every step of a staged mask takes v3's per-element tile_logit instead of
// v4's one FFMA per score on interior steps (FwdParams::mask_tile_fast; forward and tensor-core
// backward), to time the two side by side on one build. Read once.
bool mask_tile_fast_enabled() {
  static const bool v = on_unless_zero("ATTN_MEMEFF_MASK_FAST");
  return v;
}

// ATTN_MEMEFF_TF32_PV_EXACT=0: the 3xTF32 forward's P.V takes V in v4's two TF32 parts instead of
// v5's three (FwdParams::tf32_pv_exact), to compare accuracy and speed on one build. Read once.
bool tf32_pv_exact_enabled() {
  static const bool v = on_unless_zero("ATTN_MEMEFF_TF32_PV_EXACT");
  return v;
}

// ATTN_MEMEFF_TF32_LEAN=0: the 3xTF32 forward runs v7's kernel instead of v8's lean one
// (FwdParams::tf32_lean; the same roundings by design, not compared bitwise on a GPU), to time the two
// side by side on one build. Read once.
bool tf32_lean_enabled() {
  static const bool v = on_unless_zero("ATTN_MEMEFF_TF32_LEAN");
  return v;
}

// ATTN_MEMEFF_TF32_WIDE: at d128 the lean 3xTF32 forward runs its 8-warp form, K and V split once per step
// by the block (FwdParams::tf32_wide). On by default (`0` turns it off): it passed gpu-check's fp32 cases, the
// conformance suite, memcheck and racecheck, and runs the d128 fp32 forward 12-14% faster than the 4-warp
// lean form (NOTES.md v8 measured). `2`: the wide form with its TF32 parts packed per lane for LDS.128
// (v9, FwdParams::tf32_packed), the default since it passed memcheck too (same forward bits as `1`, racecheck
// clean, +3-4% at d128; NOTES.md v9, v11); `1` gives the unpacked wide form. Read once.
constexpr bool kTf32WideDefault = true;
constexpr bool kTf32PackedDefault = true;
int tf32_wide_mode() {  // 0 off, 1 wide, 2 wide and packed
  static const int v = [] {
    const char* e = std::getenv("ATTN_MEMEFF_TF32_WIDE");
    if (e == nullptr || *e == 0) return kTf32WideDefault ? (kTf32PackedDefault ? 2 : 1) : 0;
    return std::strcmp(e, "1") == 0 ? 1 : std::strcmp(e, "2") == 0 ? 2 : 0;
  }();
  return v;
}

// ATTN_MEMEFF_TF32_WGMMA=0: fp32 forward calls run the mma.sync kernel on Hopper too instead of
// v20's wgmma one (FwdParams::tf32_wgmma), to time the two on one build. Read once.
bool tf32_wgmma_enabled() {
  static const bool v = on_unless_zero("ATTN_MEMEFF_TF32_WGMMA");
  return v;
}

// Whether this addon holds sm_90a machine code (the arch list it was built with): the wgmma kernel's.
bool built_for_sm90a() {
  static const bool yes = std::string(ATTN_CUDA_ARCHS_STRING).find("90a") != std::string::npos;
  return yes;
}

// ATTN_MEMEFF_DSUM_SEQ=0: the fp32 backward's D = dO . O as v4's warp tree instead of v5's
// sequential chain in dP's order (BwdParams::dsum_seq), to compare the two on one build. Read once.
bool dsum_seq_enabled() {
  static const bool v = on_unless_zero("ATTN_MEMEFF_DSUM_SEQ");
  return v;
}

// ATTN_MEMEFF_TF32_BWD=0: fp32 backward calls run the FMA kernels instead of v10's 3xTF32 one (with D by
// bwd_dsum_tf32), to compare the two on one build. The 3xTF32 backward also follows ATTN_MEMEFF_FP32_TC's
// per-arch choice, as the forward does. Read once.
bool tf32_bwd_enabled() {
  static const bool v = on_unless_zero("ATTN_MEMEFF_TF32_BWD");
  return v;
}

// ATTN_MEMEFF_TF32_BWD_SPLIT=0: the 3xTF32 backward at d128 in v10's 4-warp form instead of v11's split one
// (BwdParams::tf32_bwd_split), to time the two on one build. Read once.
bool tf32_bwd_split_enabled() {
  static const bool v = on_unless_zero("ATTN_MEMEFF_TF32_BWD_SPLIT");
  return v;
}
// Whether the 3xTF32 backward of this bucket runs the split form: at d128 only (at d64 it measured 0.74-0.76x
// torch against 0.94-0.99x, NOTES.md v11).
bool tf32_bwd_split_at(int bucket) { return bucket == 128 && tf32_bwd_split_enabled(); }

// ATTN_MEMEFF_BWD_LEAN=0: the tensor-core backward runs v7's general step everywhere instead of v8's
// lean step where it applies (BwdParams::bwd_lean), to time the two side by side on one build. Read once.
bool bwd_lean_enabled() {
  static const bool v = on_unless_zero("ATTN_MEMEFF_BWD_LEAN");
  return v;
}

// ATTN_MEMEFF_DBIAS: how a dbias summed over batch and/or heads is formed (NOTES.md v7).
//   atomic (default): fp32 reductions in the main kernel, 4 adjacent keys per red.global.add.v4.f32 on
//     sm90 where the layout allows (else one per element);
//   scalar: v6's one red.global.add.f32 per element, and v6's one store per element for an unbroadcast
//     dbias (to time old and new side by side on one build);
//   workspace: each head's dS stored in the mask dtype into a [B, Hq, Sq, Sk] workspace, summed by
//     bwd_dbias_head_sum in a fixed order (deterministic, so deterministic calls may take it too). 16-bit
//     masks only, at most kDbiasWorkspaceMaxBytes; otherwise the atomic path, with the reason in the
//     plan's dbiasNote.
// Anything else (or unset): atomic. Read once.
enum class DbiasMode { kAtomic, kScalar, kWorkspace };
DbiasMode dbias_mode_env() {
  static const DbiasMode v = [] {
    const char* e = std::getenv("ATTN_MEMEFF_DBIAS");
    if (e == nullptr) return DbiasMode::kAtomic;
    return std::strcmp(e, "scalar") == 0 ? DbiasMode::kScalar : std::strcmp(e, "workspace") == 0 ? DbiasMode::kWorkspace : DbiasMode::kAtomic;
  }();
  return v;
}
constexpr int64_t kDbiasWorkspaceMaxBytes = 4LL << 30;
// ATTN_MEMEFF_DBIAS_STAGGER: with dbias atomics, the tensor-core backward's blocks start their query walk
// at an offset per (b, kv head) (BwdParams::dbias_stagger). Unset: on in atomic mode, off in scalar mode
// (v6 as it was); "0" off, "1" on in either. Read once.
int dbias_stagger_env() {  // 1 on, 0 off, -1 unset
  static const int v = [] {
    const char* e = std::getenv("ATTN_MEMEFF_DBIAS_STAGGER");
    if (e == nullptr || *e == 0) return -1;
    return std::strcmp(e, "0") == 0 ? 0 : std::strcmp(e, "1") == 0 ? 1 : -1;
  }();
  return v;
}

// The switches' values into a call's parameters (forward and backward read the same ones).
void apply_switches(FwdParams& p) {
  p.mask_tile_fast = mask_tile_fast_enabled();
  p.mask_free_kernels = mask_free_kernels_enabled();
  p.tf32_pv_exact = tf32_pv_exact_enabled();
  p.tf32_lean = tf32_lean_enabled();
  p.tf32_wide = tf32_wide_mode() >= 1;
  p.tf32_packed = tf32_wide_mode() == 2;
}

bool strides_mult4(const int64_t (&s)[3]) { return s[0] % 4 == 0 && s[1] % 4 == 0 && s[2] % 4 == 0; }

// Whether the 3xTF32 forward can take this fp32 call (16-byte cp.async of 4 floats).
bool tf32_fwd_ok(const FwdParams& p, int dtype, int device) {
  if (dtype != kF32 || device_info(device).major < 8 || !fp32_tensor_cores_enabled(device_info(device).major)) return false;
  if (p.head_dim % 4 || p.head_dim_v % 4 || std::max(p.head_dim, p.head_dim_v) > kTf32MaxHeadDim) return false;
  if (!aligned16(p.q) || !aligned16(p.k) || !aligned16(p.v) || !aligned16(p.o)) return false;
  if (!strides_mult4(p.q_stride) || !strides_mult4(p.k_stride) || !strides_mult4(p.v_stride) || !strides_mult4(p.o_stride)) return false;
  const KernelEntry& e = find_kernel(Family::kFwdTf32, kF32, tf32_bucket(std::max(p.head_dim, p.head_dim_v)));
  return kernel_ptx_version(e, device) >= 80;
}

// Whether the 3xTF32 backward can take this fp32 call: as the forward's checks, plus dO and shared memory.
// (Deterministic calls too: dK and dV have no atomics; their dQ is the FMA pass in key order.)
bool tf32_bwd_ok(const BwdParams& p, int dtype, int device) {
  if (dtype != kF32 || !tf32_bwd_enabled()) return false;
  if (device_info(device).major < 8 || !fp32_tensor_cores_enabled(device_info(device).major)) return false;
  if (p.head_dim % 4 || p.head_dim_v % 4 || std::max(p.head_dim, p.head_dim_v) > kTf32BwdMaxHeadDim) return false;
  if (!aligned16(p.q) || !aligned16(p.k) || !aligned16(p.v) || !aligned16(p.dout)) return false;
  if (!strides_mult4(p.q_stride) || !strides_mult4(p.k_stride) || !strides_mult4(p.v_stride) || !strides_mult4(p.do_stride)) return false;
  const int bucket = tf32_bucket(std::max(p.head_dim, p.head_dim_v));
  const KernelEntry& e = find_kernel(Family::kBwdTf32, kF32, bucket);
  if (kernel_ptx_version(e, device) < 80) return false;
  // The d128 forms take 199-227 KB: sm90's, not sm80's 163 KB or sm86's 99 KB (there: the FMA kernels).
  const int need = bucket == 64                  ? bwd_smem_bytes<Tf32BwdTraits<64>>(p)
                   : tf32_bwd_split_at(bucket) ? bwd_smem_bytes<Tf32BwdTraits<128, 2>>(p)
                                                : bwd_smem_bytes<Tf32BwdTraits<128>>(p);
  return need <= device_info(device).smem_optin;
}

const KernelEntry& require_runnable(const KernelEntry& e, int device) {
  if (kernel_ptx_version(e, device) == 0) {
    const DeviceInfo d = device_info(device);
    throw std::runtime_error(std::string("memeff-cuda: kernel ") + e.name + " has no code for sm_" + std::to_string(d.major) +
                             std::to_string(d.minor) + " (built for " ATTN_CUDA_ARCHS_STRING "); rebuild with ATTN_CUDA_ARCHS including it");
  }
  return e;
}

template <typename Fn>
auto named(const char* kernel, Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const attn::CudaError& e) {
    throw std::runtime_error(std::string(e.what()) + " [" + kernel + "]");
  }
}

}  // namespace

std::string run_forward(const FwdParams& call, int dtype, int device, cudaStream_t stream, PathRequest path) {
  FwdParams p = call;
  apply_switches(p);
  check_common(p, dtype);
  DeviceGuard guard(device);
  const std::string refusal = path == PathRequest::kSimt
                                  ? "simt path requested"
                                  : mma_refusal(p, dtype, device, kMmaMaxHeadDim, Family::kFwdMma, p.o, p.o_stride);
  if (path == PathRequest::kMma && !refusal.empty()) {
    throw std::invalid_argument("memeff-cuda: the tensor-core path was requested but cannot run this call: " + refusal);
  }
  const int dmax = std::max(p.head_dim, p.head_dim_v);
  const bool tf32 = path != PathRequest::kSimt && tf32_fwd_ok(p, dtype, device);
  // v8's lean 3xTF32 kernel keeps Q's low parts in shared memory (+33 KB at d128): two blocks per SM
  // still fit on sm90's 228 KB, not on sm80's 164 KB, where it would halve occupancy. Hopper only.
  const DeviceInfo dev = device_info(device);
  if (tf32 && dev.major < 9) p.tf32_lean = p.tf32_wide = p.tf32_packed = false;
  // v20: wgmma needs sm90 and sm_90a code; the kernel carries V in three parts (pv_exact) and takes masks at
  // d128 only (launch_fwd_tf32_wgmma).
  p.tf32_wgmma = tf32 && tf32_wgmma_enabled() && dev.major == 9 && dev.minor == 0 && built_for_sm90a() && p.tf32_pv_exact &&
                 (p.mask_kind == MaskKind::kNone || tf32_bucket(dmax) == 128 || p.features);
  const KernelEntry& e = refusal.empty() ? find_kernel(Family::kFwdMma, dtype, mma_fwd_kernel_dim(p))
                         : tf32          ? find_kernel(Family::kFwdTf32, kF32, tf32_bucket(dmax))
                                         : require_runnable(find_kernel(Family::kFwdSimt, dtype, simt_bucket(p.head_dim_v)), device);
  // The wgmma form runs under the family's entry; its name says which kernel ran.
  const std::string name = p.tf32_wgmma ? "fwd_tf32_wgmma_fp32_d" + std::to_string(e.bucket) : std::string(e.name);
  named(name.c_str(), [&] { e.fwd(p, stream); });
  return name;
}

// Rows of lse (and D, dQ's workspace) and of the keys over all sequences: packed under varlen.
int64_t query_rows(const FwdParams& p) {
  return static_cast<int64_t>(p.heads_q) * (p.cu_seqlens_q != nullptr ? p.total_q : static_cast<int64_t>(p.batch) * p.seq_q);
}
int64_t key_rows(const FwdParams& p) {
  return static_cast<int64_t>(p.heads_kv) * (p.cu_seqlens_k != nullptr ? p.total_k : static_cast<int64_t>(p.batch) * p.seq_k);
}

// The passes around the backward's main kernel (D, dQ's conversion, the split reduction) see a varlen call as
// one packed sequence of total_q queries and total_k keys: their rows are the packed rows, whatever the
// sequences (lse, D and the workspaces are laid out so).
BwdParams packed_view(const BwdParams& p) {
  BwdParams q = p;
  if (p.cu_seqlens_q != nullptr) {
    q.batch = 1;
    q.seq_q = p.total_q;
    q.seq_k = p.total_k;
    q.seq_k_rows = p.total_k;
    q.cu_seqlens_q = q.cu_seqlens_k = nullptr;
    q.seqused_k = nullptr;
  }
  return q;
}

BwdPlan plan_backward(const BwdParams& p, int dtype, int device, PathRequest path) {
  BwdPlan plan;
  const int64_t rows_q = query_rows(p);
  const std::string refusal = path == PathRequest::kSimt
                                  ? "simt path requested"
                                  : mma_refusal(p, dtype, device, kMmaBwdMaxHeadDim, Family::kBwdMma, p.dout, p.do_stride);
  if (path == PathRequest::kMma && !refusal.empty()) {
    throw std::invalid_argument("memeff-cuda: the tensor-core backward was requested but cannot run this call: " + refusal);
  }
  plan.mma = refusal.empty();
  plan.tf32 = path != PathRequest::kSimt && tf32_bwd_ok(p, dtype, device);
  const bool tc = plan.mma || plan.tf32;  // a tensor-core main kernel (bwd_step.cuh's dbias forms)
  plan.dbias_reduced = p.dbias != nullptr &&
                       ((p.dbias_size[0] == 1 && p.batch > 1) || (p.dbias_size[1] == 1 && p.heads_q > 1) ||
                        (p.dbias_size[2] == 1 && p.seq_q > 1) || (p.dbias_size[3] == 1 && p.seq_k > 1));
  // Summed over batch / heads only: each element gets B * Hq / (its own count) atomic adds from
  // the main kernel, a few per element and spread over the whole array (no hot spots), against the
  // FMA recompute of S and dP in bwd_dbias_simt. Summed over queries or keys it would be Sq (Sk)
  // adds to one address: keep the recompute kernel there, and in deterministic mode.
  const int64_t dbias_elems = static_cast<int64_t>(p.dbias_size[0]) * p.dbias_size[1] * p.dbias_size[2] * p.dbias_size[3];
  const bool over_bh_only = plan.dbias_reduced && p.dbias_size[2] == p.seq_q && p.dbias_size[3] == p.seq_k;
  plan.dbias_atomic = over_bh_only && !p.deterministic && (p.mask_dtype == kF32 || dbias_elems * 4 <= (4LL << 30));
  // v7: ATTN_MEMEFF_DBIAS=workspace (see dbias_mode_env), falling back visibly.
  const DbiasMode mode = dbias_mode_env();
  const int64_t ws_elems = static_cast<int64_t>(p.batch) * p.heads_q * p.seq_q * p.seq_k;
  if (mode == DbiasMode::kWorkspace && p.dbias != nullptr) {
    if (!plan.dbias_reduced) {
      plan.dbias_note = "workspace not needed: dbias is not broadcast (stored directly)";
    } else if (!over_bh_only) {
      plan.dbias_note = "workspace refused: dbias is summed over queries or keys (bwd_dbias_simt)";
    } else if (p.mask_dtype != kF16 && p.mask_dtype != kBF16) {
      plan.dbias_note = "workspace refused: the bias is not 16-bit (fp32 dbias takes the atomics directly)";
    } else if (ws_elems * 2 > kDbiasWorkspaceMaxBytes) {
      plan.dbias_note = "workspace refused: " + std::to_string(ws_elems * 2 >> 20) + " MiB of per-head dS is over the " +
                        std::to_string(kDbiasWorkspaceMaxBytes >> 20) + " MiB cap";
    } else {
      plan.dbias_workspace = true;
      plan.dbias_atomic = false;
    }
  }
  // 4 keys per request (tensor-core kernel): the target is contiguous along keys with rows, heads and
  // batches at multiples of 4 elements, 16-byte aligned (workspace carves are 256-byte aligned). Vector
  // reductions exist from sm90 on; vector stores everywhere. ATTN_MEMEFF_DBIAS=scalar keeps v6's path.
  const bool quad_strides = p.dbias_stride[3] == 1 && p.dbias_stride[2] % 4 == 0 && p.dbias_stride[1] % 4 == 0 && p.dbias_stride[0] % 4 == 0;
  if (tc && p.dbias != nullptr && mode != DbiasMode::kScalar) {
    if (plan.dbias_workspace) {
      plan.dbias_quads = p.seq_k % 4 == 0;
    } else if (plan.dbias_atomic) {
      plan.dbias_quads = quad_strides && device_info(device).major >= 9 && (p.mask_dtype != kF32 || aligned16(p.dbias));
    } else if (!plan.dbias_reduced) {
      plan.dbias_quads = quad_strides && aligned16(p.dbias) && p.mask_dtype != kF64;
    }
  }
  const int stagger = dbias_stagger_env();
  plan.dbias_stagger = tc && plan.dbias_atomic && (stagger >= 0 ? stagger == 1 : mode != DbiasMode::kScalar);
  plan.dbias_mode = p.dbias == nullptr        ? ""
                    : plan.dbias_workspace    ? "workspace"
                    : plan.dbias_atomic       ? (plan.dbias_quads ? "atomic-x4" : "atomic")
                    : plan.dbias_reduced      ? "recompute"
                    : plan.dbias_quads        ? "direct-x4"
                                              : "direct";
  if (plan.dbias_stagger) plan.dbias_mode += "+stagger";
  // GQA: the group's heads add into the same dbias rows; sum them in the block first (BwdParams::dbias_presum).
  plan.dbias_presum = tc && plan.dbias_atomic && p.group > 1 && p.dbias_size[1] == 1 && mode != DbiasMode::kScalar;
  if (plan.dbias_presum) plan.dbias_mode += "+presum";
  // Query splits: when key blocks x kv heads (x head-dim tiles) leave SMs idle, split each block's
  // query range and sum the dK/dV partials afterwards (bounded workspace: at most 256 MiB of partials).
  const int dmax = std::max(p.head_dim, p.head_dim_v);
  const int64_t key_block = plan.mma ? MmaBwdTraits<64>::kBlockN : plan.tf32 ? Tf32BwdTraits<64>::kBlockN : 32;
  const int64_t query_block = plan.tf32 ? Tf32BwdTraits<64>::kBlockM : 32;  // queries per step
  const int64_t n_z = tc ? 1 : (dmax + simt_bucket(dmax) - 1) / simt_bucket(dmax);
  const int64_t blocks = ((p.seq_k + key_block - 1) / key_block) * static_cast<int64_t>(p.batch) * p.heads_kv * n_z;
  const int64_t target = (tc ? 2LL : 4LL) * device_info(device).sm_count;
  const int64_t q_blocks = (p.seq_q + query_block - 1) / query_block;
  const int64_t kv_elems = key_rows(p) * (p.head_dim + p.head_dim_v);
  int64_t splits = blocks >= target ? 1 : (target + blocks - 1) / blocks;
  splits = std::min<int64_t>({splits, q_blocks, 16, std::max<int64_t>(1, (256LL << 20) / (4 * kv_elems))});
  plan.query_splits = static_cast<int>(std::max<int64_t>(1, splits));

  size_t off = 0;
  auto carve = [&](size_t floats) {
    const size_t at = off;
    off += (floats * 4 + 255) / 256 * 256;
    return at;
  };
  plan.off_dsum = carve(rows_q);
  plan.off_dq = p.deterministic ? 0 : carve(rows_q * p.head_dim);
  if (plan.query_splits > 1) {
    const int64_t kv_rows = key_rows(p);
    plan.off_dk = carve(plan.query_splits * kv_rows * p.head_dim);
    plan.off_dv = carve(plan.query_splits * kv_rows * p.head_dim_v);
  }
  if (plan.dbias_atomic && p.mask_dtype != kF32) plan.off_dbias = carve(dbias_elems);
  if (plan.dbias_workspace) plan.off_dbias = carve((ws_elems * 2 + 3) / 4);  // 16-bit elements
  plan.workspace_bytes = off;
  return plan;
}

std::vector<std::string> run_backward(BwdParams p, int dtype, int device, PathRequest path, void* workspace,
                                      size_t workspace_bytes, cudaStream_t stream) {
  apply_switches(p);
  p.dsum_seq = dsum_seq_enabled();
  check_common(p, dtype);
  require(p.dout && p.dq && p.dk && p.dv, "null gradient pointer");
  require(p.dbias == nullptr || p.mask_kind == MaskKind::kAdditive, "dbias needs an additive mask");
  DeviceGuard guard(device);
  const BwdPlan plan = plan_backward(p, dtype, device, path);
  require(workspace != nullptr && workspace_bytes >= plan.workspace_bytes,
          "workspace of " + std::to_string(workspace_bytes) + " bytes is smaller than the plan's " + std::to_string(plan.workspace_bytes));
  char* ws = static_cast<char*>(workspace);
  p.query_splits = plan.query_splits;
  p.dsum = reinterpret_cast<float*>(ws + plan.off_dsum);
  p.dq_accum = p.deterministic ? nullptr : reinterpret_cast<float*>(ws + plan.off_dq);
  p.dk_accum = plan.query_splits > 1 ? reinterpret_cast<float*>(ws + plan.off_dk) : nullptr;
  p.dv_accum = plan.query_splits > 1 ? reinterpret_cast<float*>(ws + plan.off_dv) : nullptr;

  const int dmax = std::max(p.head_dim, p.head_dim_v);
  const KernelEntry& aux = require_runnable(find_kernel(Family::kBwdAux, dtype, 0), device);
  const KernelEntry& main = plan.mma    ? find_kernel(Family::kBwdMma, dtype, mma_bwd_bucket(p))
                            : plan.tf32 ? find_kernel(Family::kBwdTf32, kF32, tf32_bucket(dmax))
                                        : require_runnable(find_kernel(Family::kBwdSimt, dtype, simt_bucket(dmax)), device);
  p.dsum_tf32 = plan.tf32;
  // With the split form, D's two parts as the kernel sums dP's head dim in two halves (bwd_dsum_tf32.cuh).
  p.tf32_bwd_split = plan.tf32 && tf32_bwd_split_at(tf32_bucket(dmax));
  p.dsum_tf32_half = p.tf32_bwd_split ? Tf32BwdTraits<128, 2>::kKsPart : 0;
  std::vector<std::string> ran;
  const int64_t rows_q = query_rows(p);
  if (p.dq_accum) ATTN_CUDA_CHECK(cudaMemsetAsync(p.dq_accum, 0, rows_q * p.head_dim * 4, stream));

  // dbias: the main kernel writes an unbroadcast one where tiles are visited; zero it first so the
  // tiles causal skips read 0. A broadcast one has its own kernel, which writes every element.
  BwdParams main_p = p;
  if (plan.dbias_reduced && !plan.dbias_atomic && !plan.dbias_workspace) main_p.dbias = nullptr;
  main_p.dbias_quads = plan.dbias_quads && aligned16(workspace);
  main_p.dbias_stagger = plan.dbias_stagger;
  main_p.dbias_presum = plan.dbias_presum;
  main_p.bwd_lean = bwd_lean_enabled();
  if (plan.dbias_workspace) {  // the main kernel writes it as an unbroadcast [B, Hq, Sq, Sk] dbias
    void* dws = ws + plan.off_dbias;
    main_p.dbias = dws;
    main_p.dbias_stride[3] = 1;
    main_p.dbias_stride[2] = p.seq_k;
    main_p.dbias_stride[1] = static_cast<int64_t>(p.seq_q) * p.seq_k;
    main_p.dbias_stride[0] = main_p.dbias_stride[1] * p.heads_q;
    p.dbias_ws = dws;
    // Causal skips whole tiles, which the head sum then reads: zero them. Otherwise every element is written.
    if (p.has_right) ATTN_CUDA_CHECK(cudaMemsetAsync(dws, 0, static_cast<size_t>(p.batch) * p.heads_q * p.seq_q * p.seq_k * 2, stream));
  } else if (plan.dbias_atomic) {
    main_p.dbias_accum = p.mask_dtype == kF32 ? static_cast<float*>(p.dbias) : reinterpret_cast<float*>(ws + plan.off_dbias);
    p.dbias_accum = main_p.dbias_accum;
    const int64_t elems = static_cast<int64_t>(p.dbias_size[0]) * p.dbias_size[1] * p.dbias_size[2] * p.dbias_size[3];
    ATTN_CUDA_CHECK(cudaMemsetAsync(main_p.dbias_accum, 0, static_cast<size_t>(elems) * 4, stream));
  } else if (main_p.dbias) {
    const int esize = p.mask_dtype == kF64 ? 8 : p.mask_dtype == kF32 ? 4 : 2;
    ATTN_CUDA_CHECK(cudaMemsetAsync(main_p.dbias, 0, static_cast<size_t>(p.batch) * p.heads_q * p.seq_q * p.seq_k * esize, stream));
  }
  const BwdParams packed = packed_view(p);
  named(aux.name, [&] { aux.aux(packed, BwdStage::kDsum, stream); });
  named(main.name, [&] { main.bwd(main_p, stream); });
  ran.push_back(main.name);
  if (!p.deterministic) named(aux.name, [&] { aux.aux(packed, BwdStage::kDqConvert, stream); });
  if (plan.query_splits > 1) named(aux.name, [&] { aux.aux(packed, BwdStage::kKvReduce, stream); });
  if (plan.dbias_atomic && p.mask_dtype != kF32) named(aux.name, [&] { aux.aux(p, BwdStage::kDbiasConvert, stream); });
  if (plan.dbias_workspace) named(aux.name, [&] { aux.aux(p, BwdStage::kDbiasHeadSum, stream); });
  if (plan.dbias_reduced && !plan.dbias_atomic && !plan.dbias_workspace) named(aux.name, [&] { aux.aux(p, BwdStage::kDbias, stream); });
  ran.push_back(aux.name);
  return ran;
}

std::vector<std::string> kernel_names() {
  std::vector<std::string> names;
  for (const KernelEntry& e : kKernels) names.emplace_back(e.name);
  return names;
}

std::string device_support(int device) {
  const DeviceInfo d = device_info(device);
  if (d.major < 5) return "memeff-cuda needs sm50 or newer; this device is sm_" + std::to_string(d.major) + std::to_string(d.minor);
  DeviceGuard guard(device);
  const KernelEntry& e = find_kernel(Family::kFwdSimt, kF32, 64);
  if (kernel_ptx_version(e, device) == 0) {
    return "the addon was built for " ATTN_CUDA_ARCHS_STRING " and has no code for sm_" + std::to_string(d.major) +
           std::to_string(d.minor) + "; rebuild with ATTN_CUDA_ARCHS including " + std::to_string(d.major) + std::to_string(d.minor);
  }
  return "";
}

}  // namespace memeff
