#include "dispatch.h"

#include <algorithm>
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
  require(p.batch > 0 && p.heads_q > 0 && p.heads_kv > 0 && p.seq_q > 0 && p.seq_k > 0 && p.head_dim > 0 &&
              p.head_dim_v > 0,
          "every size must be positive");
  require(p.heads_q % p.heads_kv == 0 && p.group == p.heads_q / p.heads_kv, "heads_q must be a multiple of heads_kv");
  require(p.mask_kind == MaskKind::kNone || p.mask != nullptr, "mask pointer is null");
  require(p.mask_kind != MaskKind::kBool || p.mask_dtype == kBoolean, "a boolean mask must have dtype bool");
  require(p.mask_kind != MaskKind::kAdditive || p.mask_dtype == kF32 || p.mask_dtype == dtype,
          "an additive mask must be float32 or the query's dtype");  // core's rule; the staged tiles rely on it
  require(!p.dropout || p.dropout_keep_scale >= 1.f, "dropout keep scale must be 1 / (1 - p)");
  require(static_cast<int64_t>(p.seq_q) <= 65535LL * 32, "seq_q too large for the grid");
  require((p.cu_seqlens_q == nullptr) == (p.cu_seqlens_k == nullptr),
          "varlen needs both cu_seqlens_q and cu_seqlens_k");
  require(p.cu_seqlens_q == nullptr ||
              (p.mask_kind == MaskKind::kNone && p.total_q > 0 && p.total_k >= 0 && p.q_stride[0] == 0 &&
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
  return "needs " + std::to_string(need / 1024) + " KB of shared memory per block, the device allows " +
         std::to_string(have / 1024);
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
  if (!aligned16(p.q) || !aligned16(p.k) || !aligned16(p.v) || !aligned16(extra_ptr))
    return "pointers not 16-byte aligned";
  if (!strides_mult8(p.q_stride) || !strides_mult8(p.k_stride) || !strides_mult8(p.v_stride) ||
      !strides_mult8(extra_stride)) {
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

// fp32 on tensor cores (3xTF32, forward and backward) on Hopper (sm90): there it passed the whole conformance
// suite's fp32 cases and runs 1.5-2x the FMA kernels' speed. Other archs take the FMA kernels until a GPU of
// theirs runs the same checks (sm80's 164 KB of shared memory would also halve the forward's occupancy).
bool fp32_tensor_cores_on(int major) { return major == 9; }

// Whether this addon holds sm_90a machine code (the arch list it was built with): the wgmma kernel's.
bool built_for_sm90a() {
  static const bool yes = std::string(ATTN_CUDA_ARCHS_STRING).find("90a") != std::string::npos;
  return yes;
}

bool strides_mult4(const int64_t (&s)[3]) { return s[0] % 4 == 0 && s[1] % 4 == 0 && s[2] % 4 == 0; }

// Whether the 3xTF32 forward can take this fp32 call (16-byte cp.async of 4 floats).
bool tf32_fwd_ok(const FwdParams& p, int dtype, int device) {
  if (dtype != kF32 || !fp32_tensor_cores_on(device_info(device).major)) return false;
  if (p.head_dim % 4 || p.head_dim_v % 4 || std::max(p.head_dim, p.head_dim_v) > kTf32MaxHeadDim) return false;
  if (!aligned16(p.q) || !aligned16(p.k) || !aligned16(p.v) || !aligned16(p.o)) return false;
  if (!strides_mult4(p.q_stride) || !strides_mult4(p.k_stride) || !strides_mult4(p.v_stride) ||
      !strides_mult4(p.o_stride))
    return false;
  const KernelEntry& e = find_kernel(Family::kFwdTf32, kF32, tf32_bucket(std::max(p.head_dim, p.head_dim_v)));
  return kernel_ptx_version(e, device) >= 80;
}

// Whether the 3xTF32 backward can take this fp32 call: as the forward's checks, plus dO and shared memory.
// (Deterministic calls too: dK and dV have no atomics; their dQ is the FMA pass in key order.)
bool tf32_bwd_ok(const BwdParams& p, int dtype, int device) {
  if (dtype != kF32 || !fp32_tensor_cores_on(device_info(device).major)) return false;
  if (p.head_dim % 4 || p.head_dim_v % 4 || std::max(p.head_dim, p.head_dim_v) > kTf32BwdMaxHeadDim) return false;
  if (!aligned16(p.q) || !aligned16(p.k) || !aligned16(p.v) || !aligned16(p.dout)) return false;
  if (!strides_mult4(p.q_stride) || !strides_mult4(p.k_stride) || !strides_mult4(p.v_stride) ||
      !strides_mult4(p.do_stride))
    return false;
  const int bucket = tf32_bucket(std::max(p.head_dim, p.head_dim_v));
  const KernelEntry& e = find_kernel(Family::kBwdTf32, kF32, bucket);
  if (kernel_ptx_version(e, device) < 80) return false;
  // The d128 form takes 199-227 KB: sm90's, not sm80's 163 KB or sm86's 99 KB (there: the FMA kernels).
  const int need =
      bucket == 64 ? bwd_smem_bytes<Tf32BwdBucketTraits<64>>(p) : bwd_smem_bytes<Tf32BwdBucketTraits<128>>(p);
  return need <= device_info(device).smem_optin;
}

const KernelEntry& require_runnable(const KernelEntry& e, int device) {
  if (kernel_ptx_version(e, device) == 0) {
    const DeviceInfo d = device_info(device);
    throw std::runtime_error(std::string("memeff-cuda: kernel ") + e.name + " has no code for sm_" +
                             std::to_string(d.major) + std::to_string(d.minor) +
                             " (built for " ATTN_CUDA_ARCHS_STRING "); rebuild with ATTN_CUDA_ARCHS including it");
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
  // wgmma needs sm90 and sm_90a code; it takes masks at d128 (and with features) only: at d64 the mma.sync
  // kernel stages the mask tile with 3 blocks per SM and is faster (launch_fwd_tf32_wgmma).
  const DeviceInfo dev = device_info(device);
  p.tf32_wgmma = tf32 && dev.major == 9 && dev.minor == 0 && built_for_sm90a() &&
                 (p.mask_kind == MaskKind::kNone || tf32_bucket(dmax) == 128 || p.features);
  const KernelEntry& e =
      refusal.empty() ? find_kernel(Family::kFwdMma, dtype, mma_fwd_kernel_dim(p))
      : tf32          ? find_kernel(Family::kFwdTf32, kF32, tf32_bucket(dmax))
                      : require_runnable(find_kernel(Family::kFwdSimt, dtype, simt_bucket(p.head_dim_v)), device);
  // The wgmma form runs under the family's entry; its name says which kernel ran.
  const std::string name = p.tf32_wgmma ? "fwd_tf32_wgmma_fp32_d" + std::to_string(e.bucket) : std::string(e.name);
  named(name.c_str(), [&] { e.fwd(p, stream); });
  return name;
}

// Rows of lse (and D, dQ's workspace) and of the keys over all sequences: packed under varlen.
int64_t query_rows(const FwdParams& p) {
  return static_cast<int64_t>(p.heads_q) *
         (p.cu_seqlens_q != nullptr ? p.total_q : static_cast<int64_t>(p.batch) * p.seq_q);
}
int64_t key_rows(const FwdParams& p) {
  return static_cast<int64_t>(p.heads_kv) *
         (p.cu_seqlens_k != nullptr ? p.total_k : static_cast<int64_t>(p.batch) * p.seq_k);
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
  const std::string refusal = path == PathRequest::kSimt ? "simt path requested"
                                                         : mma_refusal(p, dtype, device, kMmaBwdMaxHeadDim,
                                                                       Family::kBwdMma, p.dout, p.do_stride);
  if (path == PathRequest::kMma && !refusal.empty()) {
    throw std::invalid_argument("memeff-cuda: the tensor-core backward was requested but cannot run this call: " +
                                refusal);
  }
  plan.mma = refusal.empty();
  plan.tf32 = path != PathRequest::kSimt && tf32_bwd_ok(p, dtype, device);
  const bool tc = plan.mma || plan.tf32;  // a tensor-core main kernel (bwd_step.cuh's dbias forms)
  plan.dbias_reduced =
      p.dbias != nullptr && ((p.dbias_size[0] == 1 && p.batch > 1) || (p.dbias_size[1] == 1 && p.heads_q > 1) ||
                             (p.dbias_size[2] == 1 && p.seq_q > 1) || (p.dbias_size[3] == 1 && p.seq_k > 1));
  // Summed over batch / heads only: each element gets B * Hq / (its own count) atomic adds from
  // the main kernel, a few per element and spread over the whole array (no hot spots), against the
  // FMA recompute of S and dP in bwd_dbias_simt. Summed over queries or keys it would be Sq (Sk)
  // adds to one address: keep the recompute kernel there, and in deterministic mode.
  const int64_t dbias_elems =
      static_cast<int64_t>(p.dbias_size[0]) * p.dbias_size[1] * p.dbias_size[2] * p.dbias_size[3];
  const bool over_bh_only = plan.dbias_reduced && p.dbias_size[2] == p.seq_q && p.dbias_size[3] == p.seq_k;
  plan.dbias_atomic = over_bh_only && !p.deterministic && (p.mask_dtype == kF32 || dbias_elems * 4 <= (4LL << 30));
  // 4 keys per request (tensor-core kernel): the target is contiguous along keys with rows, heads and
  // batches at multiples of 4 elements, 16-byte aligned (workspace carves are 256-byte aligned). Vector
  // reductions exist from sm90 on; vector stores everywhere.
  const bool quad_strides =
      p.dbias_stride[3] == 1 && p.dbias_stride[2] % 4 == 0 && p.dbias_stride[1] % 4 == 0 && p.dbias_stride[0] % 4 == 0;
  if (tc && p.dbias != nullptr) {
    if (plan.dbias_atomic) {
      plan.dbias_quads = quad_strides && device_info(device).major >= 9 && (p.mask_dtype != kF32 || aligned16(p.dbias));
    } else if (!plan.dbias_reduced) {
      plan.dbias_quads = quad_strides && aligned16(p.dbias) && p.mask_dtype != kF64;
    }
  }
  plan.dbias_stagger = tc && plan.dbias_atomic;
  plan.dbias_mode = p.dbias == nullptr   ? ""
                    : plan.dbias_atomic  ? (plan.dbias_quads ? "atomic-x4" : "atomic")
                    : plan.dbias_reduced ? "recompute"
                    : plan.dbias_quads   ? "direct-x4"
                                         : "direct";
  if (plan.dbias_stagger) plan.dbias_mode += "+stagger";
  // GQA: the group's heads add into the same dbias rows; sum them in the block first (BwdParams::dbias_presum).
  plan.dbias_presum = tc && plan.dbias_atomic && p.group > 1 && p.dbias_size[1] == 1;
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
  plan.workspace_bytes = off;
  return plan;
}

std::vector<std::string> run_backward(BwdParams p, int dtype, int device, PathRequest path, void* workspace,
                                      size_t workspace_bytes, cudaStream_t stream) {
  check_common(p, dtype);
  require(p.dout && p.dq && p.dk && p.dv, "null gradient pointer");
  require(p.dbias == nullptr || p.mask_kind == MaskKind::kAdditive, "dbias needs an additive mask");
  DeviceGuard guard(device);
  const BwdPlan plan = plan_backward(p, dtype, device, path);
  require(workspace != nullptr && workspace_bytes >= plan.workspace_bytes,
          "workspace of " + std::to_string(workspace_bytes) + " bytes is smaller than the plan's " +
              std::to_string(plan.workspace_bytes));
  char* ws = static_cast<char*>(workspace);
  p.query_splits = plan.query_splits;
  p.dsum = reinterpret_cast<float*>(ws + plan.off_dsum);
  p.dq_accum = p.deterministic ? nullptr : reinterpret_cast<float*>(ws + plan.off_dq);
  p.dk_accum = plan.query_splits > 1 ? reinterpret_cast<float*>(ws + plan.off_dk) : nullptr;
  p.dv_accum = plan.query_splits > 1 ? reinterpret_cast<float*>(ws + plan.off_dv) : nullptr;

  const int dmax = std::max(p.head_dim, p.head_dim_v);
  const KernelEntry& aux = require_runnable(find_kernel(Family::kBwdAux, dtype, 0), device);
  const KernelEntry& main = plan.mma ? find_kernel(Family::kBwdMma, dtype, mma_bwd_bucket(p))
                            : plan.tf32
                                ? find_kernel(Family::kBwdTf32, kF32, tf32_bucket(dmax))
                                : require_runnable(find_kernel(Family::kBwdSimt, dtype, simt_bucket(dmax)), device);
  p.dsum_tf32 = plan.tf32;
  // At d128 (the split form), D's two parts as the kernel sums dP's head dim in two halves (bwd_dsum_tf32.cuh).
  p.dsum_tf32_half = plan.tf32 && tf32_bucket(dmax) == 128 ? Tf32BwdBucketTraits<128>::kKsPart : 0;
  std::vector<std::string> ran;
  const int64_t rows_q = query_rows(p);
  if (p.dq_accum) ATTN_CUDA_CHECK(cudaMemsetAsync(p.dq_accum, 0, rows_q * p.head_dim * 4, stream));

  // dbias: the main kernel writes an unbroadcast one where tiles are visited; zero it first so the
  // tiles causal skips read 0. A broadcast one has its own kernel, which writes every element.
  BwdParams main_p = p;
  if (plan.dbias_reduced && !plan.dbias_atomic) main_p.dbias = nullptr;
  main_p.dbias_quads = plan.dbias_quads && aligned16(workspace);
  main_p.dbias_stagger = plan.dbias_stagger;
  main_p.dbias_presum = plan.dbias_presum;
  if (plan.dbias_atomic) {
    main_p.dbias_accum =
        p.mask_dtype == kF32 ? static_cast<float*>(p.dbias) : reinterpret_cast<float*>(ws + plan.off_dbias);
    p.dbias_accum = main_p.dbias_accum;
    const int64_t elems = static_cast<int64_t>(p.dbias_size[0]) * p.dbias_size[1] * p.dbias_size[2] * p.dbias_size[3];
    ATTN_CUDA_CHECK(cudaMemsetAsync(main_p.dbias_accum, 0, static_cast<size_t>(elems) * 4, stream));
  } else if (main_p.dbias) {
    const int esize = p.mask_dtype == kF64 ? 8 : p.mask_dtype == kF32 ? 4 : 2;
    ATTN_CUDA_CHECK(
        cudaMemsetAsync(main_p.dbias, 0, static_cast<size_t>(p.batch) * p.heads_q * p.seq_q * p.seq_k * esize, stream));
  }
  const BwdParams packed = packed_view(p);
  named(aux.name, [&] { aux.aux(packed, BwdStage::kDsum, stream); });
  named(main.name, [&] { main.bwd(main_p, stream); });
  ran.push_back(main.name);
  if (!p.deterministic) named(aux.name, [&] { aux.aux(packed, BwdStage::kDqConvert, stream); });
  if (plan.query_splits > 1) named(aux.name, [&] { aux.aux(packed, BwdStage::kKvReduce, stream); });
  if (plan.dbias_atomic && p.mask_dtype != kF32) named(aux.name, [&] { aux.aux(p, BwdStage::kDbiasConvert, stream); });
  if (plan.dbias_reduced && !plan.dbias_atomic) named(aux.name, [&] { aux.aux(p, BwdStage::kDbias, stream); });
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
  if (d.major < 5)
    return "memeff-cuda needs sm50 or newer; this device is sm_" + std::to_string(d.major) + std::to_string(d.minor);
  DeviceGuard guard(device);
  const KernelEntry& e = find_kernel(Family::kFwdSimt, kF32, 64);
  if (kernel_ptx_version(e, device) == 0) {
    return "the addon was built for " ATTN_CUDA_ARCHS_STRING " and has no code for sm_" + std::to_string(d.major) +
           std::to_string(d.minor) + "; rebuild with ATTN_CUDA_ARCHS including " + std::to_string(d.major) +
           std::to_string(d.minor);
  }
  return "";
}

}  // namespace memeff
