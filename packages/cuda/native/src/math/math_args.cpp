#include "math_args.h"

#include <cmath>
#include <limits>
#include <string>

#include "caching_allocator.h"
#include "devices.h"
#include "errors.h"
#include "math_limits.h"

namespace attn::math {
namespace {

[[noreturn]] void bad(const std::string& what) { throw InvalidArgument("cuda-math: " + what, "ATTN_BAD_ARGUMENT"); }

Napi::Value field(const Napi::Object& o, const char* key) {
  Napi::Value v = o.Get(key);
  if (v.IsUndefined()) bad(std::string("missing argument '") + key + "'");
  return v;
}

double number(const Napi::Object& o, const char* key) {
  Napi::Value v = field(o, key);
  if (!v.IsNumber()) bad(std::string("'") + key + "' must be a number");
  const double x = v.As<Napi::Number>().DoubleValue();
  if (!std::isfinite(x)) bad(std::string("'") + key + "' must be finite");
  return x;
}

// An integer in [lo, hi] (hi at most 2^53, what a JS number holds exactly).
int64_t integer(const Napi::Object& o, const char* key, int64_t lo, int64_t hi) {
  const double x = number(o, key);
  if (std::floor(x) != x || x < static_cast<double>(lo) || x > static_cast<double>(hi)) {
    bad(std::string("'") + key + "' must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
        "], got " + std::to_string(x));
  }
  return static_cast<int64_t>(x);
}

constexpr int64_t kMaxSafe = (int64_t{1} << 53) - 1;

bool boolean(const Napi::Object& o, const char* key) {
  Napi::Value v = field(o, key);
  if (!v.IsBoolean()) bad(std::string("'") + key + "' must be a boolean");
  return v.As<Napi::Boolean>().Value();
}

uint64_t big(const Napi::Object& o, const char* key) {
  Napi::Value v = field(o, key);
  if (!v.IsBigInt()) bad(std::string("'") + key + "' must be a bigint");
  bool lossless = false;
  const uint64_t x = v.As<Napi::BigInt>().Uint64Value(&lossless);
  if (!lossless) bad(std::string("'") + key + "' must fit 64 unsigned bits");
  return x;
}

// Whether an optional field is given (an object; null or absent: not given).
bool present(const Napi::Object& o, const char* key) {
  Napi::Value v = o.Get(key);
  if (v.IsUndefined() || v.IsNull()) return false;
  if (!v.IsObject()) bad(std::string("'") + key + "' must be an object or null");
  return true;
}

std::vector<int64_t> int_array(const Napi::Object& o, const char* key) {
  Napi::Value v = field(o, key);
  if (!v.IsArray()) bad(std::string("'") + key + "' must be an array");
  Napi::Array a = v.As<Napi::Array>();
  std::vector<int64_t> out(a.Length());
  for (uint32_t i = 0; i < a.Length(); ++i) {
    Napi::Value x = a.Get(i);
    const double d = x.IsNumber() ? x.As<Napi::Number>().DoubleValue() : -1;
    if (!(d >= 0 && d <= static_cast<double>(kMaxSafe)) || std::floor(d) != d) {
      bad(std::string("'") + key + "' must hold non-negative integers");
    }
    out[i] = static_cast<int64_t>(d);
  }
  return out;
}

// A host Int32Array (varlen offsets, key counts), or empty when absent.
std::vector<int32_t> optional_int32s(const Napi::Object& o, const char* key) {
  Napi::Value v = o.Get(key);
  if (v.IsUndefined() || v.IsNull()) return {};
  if (!v.IsTypedArray() || v.As<Napi::TypedArray>().TypedArrayType() != napi_int32_array) {
    bad(std::string("'") + key + "' must be an Int32Array or null");
  }
  Napi::Int32Array a = v.As<Napi::Int32Array>();
  return std::vector<int32_t>(a.Data(), a.Data() + a.ElementLength());
}

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

// A device tensor {ptr, dtype, shape, strides}: its shape must be `want` and its dtype `dtype`, and
// every element it can address must lie in one live buffer of `device`.
struct Tensor {
  void* ptr = nullptr;
  DType dtype = DType::kFloat32;
  std::vector<int64_t> shape, strides;
};

Tensor tensor_arg(const Napi::Object& o, const char* key, int device) {
  if (!present(o, key)) bad(std::string("missing tensor '") + key + "'");
  const Napi::Object t = o.Get(key).As<Napi::Object>();
  Tensor out;
  out.ptr = reinterpret_cast<void*>(static_cast<uintptr_t>(big(t, "ptr")));
  const int64_t code = integer(t, "dtype", 0, static_cast<int64_t>(DType::kInt32));
  out.dtype = static_cast<DType>(code);
  out.shape = int_array(t, "shape");
  out.strides = int_array(t, "strides");
  if (out.shape.size() != out.strides.size() || out.shape.size() > 4) {
    bad(std::string("'") + key + "' must have at most 4 dims with one stride each");
  }
  // The largest element offset, in 128 bits: sizes and strides up to 2^53 cannot overflow it.
  __int128 last = 0;
  bool empty = false;
  for (size_t d = 0; d < out.shape.size(); ++d) {
    if (out.shape[d] == 0)
      empty = true;
    else
      last += static_cast<__int128>(out.shape[d] - 1) * out.strides[d];
  }
  if (!empty) {
    const __int128 bytes = (last + 1) * element_size(out.dtype);
    if (bytes > static_cast<__int128>(kMaxSafe))
      bad(std::string("'") + key + "' spans more bytes than any buffer holds");
    CachingAllocator::instance().check_range(device, out.ptr, static_cast<size_t>(bytes), key);
  }
  return out;
}

void expect_shape(const Tensor& t, const char* key, const std::vector<int64_t>& want, DType dtype) {
  if (t.shape != want)
    bad(std::string("'") + key + "' must have shape " + shape_str(want) + ", got " + shape_str(t.shape));
  if (t.dtype != dtype)
    bad(std::string("'") + key + "' has dtype code " + std::to_string(static_cast<int>(t.dtype)) + ", expected " +
        std::to_string(static_cast<int>(dtype)));
}

// Rows addressing of a q/k/v-like tensor: dense [B, H, S, C], packed [T, H, C] or a paged pool
// [N, blockSize, H, C] (sb = the page stride, sr = the row stride inside a page).
Rows rows_of(const Tensor& t, bool packed) {
  Rows r;
  r.data = t.ptr;
  if (t.shape.size() == 4 && packed) {
    r.sb = t.strides[0];
    r.sr = t.strides[1];
    r.sh = t.strides[2];
    r.sc = t.strides[3];
  } else if (packed) {
    r.sb = 0;
    r.sh = t.strides[1];
    r.sr = t.strides[0];
    r.sc = t.strides[2];
  } else {
    r.sb = t.strides[0];
    r.sh = t.strides[1];
    r.sr = t.strides[2];
    r.sc = t.strides[3];
  }
  return r;
}

// Offsets: B + 1 of them, from 0, non-decreasing, ending at the packed length (total < 0: any end, for
// paged keys, whose offsets give only lengths).
void check_offsets(const std::vector<int32_t>& cu, int64_t batch, int64_t total, const char* key) {
  if (static_cast<int64_t>(cu.size()) != batch + 1) bad(std::string("'") + key + "' must hold batch + 1 offsets");
  if (cu[0] != 0) bad(std::string("'") + key + "' must start at 0");
  for (int64_t b = 0; b < batch; ++b) {
    if (cu[b + 1] < cu[b]) bad(std::string("'") + key + "' must be non-decreasing");
  }
  if (total >= 0 && cu[batch] != total)
    bad(std::string("'") + key + "' must end at the packed length " + std::to_string(total));
}

// Finite once rounded to float32 (core's float32Scalars: Math.fround): below FLT_MAX plus half its ulp.
bool float32_finite(double x) {
  return std::fabs(x) < static_cast<double>(std::numeric_limits<float>::max()) + std::ldexp(1.0, 103);
}

// Row-major without gaps; size-1 dims may have any stride, and an empty tensor is contiguous (as core says).
bool contiguous(const Tensor& t) {
  for (const int64_t n : t.shape) {
    if (n == 0) return true;
  }
  int64_t expected = 1;
  for (size_t d = t.shape.size(); d-- > 0;) {
    if (t.shape[d] != 1 && t.strides[d] != expected) return false;
    expected *= t.shape[d];
  }
  return true;
}

}  // namespace

CallInfo read_forward(const Napi::Object& a, Params& p) {
  CallInfo call;
  call.device = static_cast<int>(integer(a, "device", 0, 1 << 20));
  check_device_index(call.device);
  const int dev = call.device;
  call.dtype = static_cast<DType>(integer(a, "dtype", 0, static_cast<int64_t>(DType::kBFloat16)));

  p.batch = integer(a, "batch", 0, kMaxSafe);
  p.heads_q = integer(a, "headsQ", 0, kMaxSafe);
  p.heads_kv = integer(a, "headsKV", 0, kMaxSafe);
  p.seq_q = integer(a, "seqQ", 0, kMaxSeq);
  p.seq_k = integer(a, "seqK", 0, kMaxSeq);
  p.head_dim = static_cast<int32_t>(integer(a, "headDim", 1, kMaxHeadDim));
  p.head_dim_v = static_cast<int32_t>(integer(a, "headDimV", 0, kMaxHeadDim));
  if (p.heads_kv == 0 ? p.heads_q != 0 : p.heads_q % p.heads_kv != 0) bad("headsKV must divide headsQ");
  p.group = p.heads_kv == 0 ? 1 : p.heads_q / p.heads_kv;
  if (static_cast<__int128>(p.batch) * p.heads_q > static_cast<__int128>(0xffffffffu)) {
    bad("batch * headsQ must fit dropout's 32-bit counter word");
  }

  call.cu_q = optional_int32s(a, "cuSeqlensQ");
  call.cu_k = optional_int32s(a, "cuSeqlensK");
  const bool packed = !call.cu_q.empty();
  if (packed != !call.cu_k.empty()) bad("cuSeqlensQ and cuSeqlensK come together");

  const Tensor q = tensor_arg(a, "q", dev), k = tensor_arg(a, "k", dev), v = tensor_arg(a, "v", dev);
  const Tensor out = tensor_arg(a, "out", dev), lse = tensor_arg(a, "lse", dev);
  const int64_t B = p.batch, Hq = p.heads_q, Hk = p.heads_kv, D = p.head_dim, Dv = p.head_dim_v;
  // Paged K/V: blockSize > 0 with the host table (row-major [B, maxBlocksPerSeq]).
  p.block_size = integer(a, "blockSize", 0, kMaxSafe);
  const bool paged = p.block_size > 0;
  if (paged) {
    if (!packed) bad("paged K/V (a block table) needs varlen offsets");
    call.block_table = optional_int32s(a, "blockTable");
    if (B == 0 ? !call.block_table.empty() : call.block_table.size() % B != 0) bad("'blockTable' must hold batch rows");
    p.max_blocks = B == 0 ? 0 : static_cast<int64_t>(call.block_table.size()) / B;
  } else if (present(a, "blockTable")) {
    bad("'blockTable' needs blockSize > 0");
  } else if (present(a, "keyStart")) {
    bad("'keyStart' needs a block table");
  }
  if (packed) {
    p.total_q = q.shape.empty() ? 0 : q.shape[0];
    check_offsets(call.cu_q, B, p.total_q, "cuSeqlensQ");
    for (int64_t b = 0; b < B; ++b) {
      if (call.cu_q[b + 1] - call.cu_q[b] > p.seq_q) bad("a query sequence is longer than seqQ");
    }
    expect_shape(q, "q", {p.total_q, Hq, D}, call.dtype);
    if (paged) {
      p.num_blocks = k.shape.size() == 4 ? k.shape[0] : 0;
      check_offsets(call.cu_k, B, -1, "cuSeqlensK");
      expect_shape(k, "k", {p.num_blocks, p.block_size, Hk, D}, call.dtype);
      expect_shape(v, "v", {p.num_blocks, p.block_size, Hk, Dv}, call.dtype);
      // A kv cache's leftpadK: sequence b's keys start at key position keyStart[b] of its table row.
      call.key_start = optional_int32s(a, "keyStart");
      if (!call.key_start.empty() && static_cast<int64_t>(call.key_start.size()) != B)
        bad("'keyStart' must hold one position per sequence");
      // Every page a sequence reads is in the table and in the pool.
      for (int64_t b = 0; b < B; ++b) {
        const int64_t start = call.key_start.empty() ? 0 : call.key_start[b];
        if (start < 0) bad("'keyStart' positions must be >= 0");
        const int64_t keys = start + int64_t{call.cu_k[b + 1]} - call.cu_k[b];
        const int64_t needed = (keys + p.block_size - 1) / p.block_size;
        if (needed > p.max_blocks) bad("'blockTable' has fewer columns than a sequence has blocks");
        for (int64_t i = 0; i < needed; ++i) {
          const int32_t page = call.block_table[b * p.max_blocks + i];
          if (page < 0 || page >= p.num_blocks) bad("'blockTable' names a block outside the pool");
        }
      }
    } else {
      const int64_t total_k = k.shape.empty() ? 0 : k.shape[0];
      check_offsets(call.cu_k, B, total_k, "cuSeqlensK");
      expect_shape(k, "k", {total_k, Hk, D}, call.dtype);
      expect_shape(v, "v", {total_k, Hk, Dv}, call.dtype);
    }
    for (int64_t b = 0; b < B; ++b) {
      if (call.cu_k[b + 1] - call.cu_k[b] > p.seq_k) bad("a key sequence is longer than seqK");
    }
    expect_shape(out, "out", {p.total_q, Hq, Dv}, call.dtype);
    expect_shape(lse, "lse", {Hq, p.total_q}, DType::kFloat32);
    p.rows = Hq * p.total_q;  // lse's size: it was allocated, so it is below 2^53
  } else {
    expect_shape(q, "q", {B, Hq, p.seq_q, D}, call.dtype);
    expect_shape(k, "k", {B, Hk, p.seq_k, D}, call.dtype);
    expect_shape(v, "v", {B, Hk, p.seq_k, Dv}, call.dtype);
    expect_shape(out, "out", {B, Hq, p.seq_q, Dv}, call.dtype);
    expect_shape(lse, "lse", {B, Hq, p.seq_q}, DType::kFloat32);
    p.rows = B * Hq * p.seq_q;  // lse's size: it was allocated, so it is below 2^53
  }
  if (!contiguous(lse)) bad("'lse' must be contiguous");
  p.q = rows_of(q, packed);
  p.k = rows_of(k, packed);
  p.v = rows_of(v, packed);
  p.out = rows_of(out, packed);
  p.lse = static_cast<float*>(lse.ptr);

  call.seqused_k = optional_int32s(a, "sequsedK");
  if (!call.seqused_k.empty()) {
    if (static_cast<int64_t>(call.seqused_k.size()) != B) bad("'sequsedK' must hold one count per sequence");
    for (int64_t b = 0; b < B; ++b) {
      const int64_t stored = packed ? call.cu_k[b + 1] - call.cu_k[b] : p.seq_k;
      if (call.seqused_k[b] < 0 || call.seqused_k[b] > stored)
        bad("'sequsedK' counts must lie in [0, keys of the sequence]");
    }
  }

  p.scale = number(a, "scale");
  p.softcap = number(a, "softcap");
  if (p.softcap < 0) bad("'softcap' must be >= 0");
  call.acc64 = call.dtype == DType::kFloat64 || !float32_finite(p.scale) || !float32_finite(p.softcap);
  p.lower_right = boolean(a, "lowerRight");
  p.window_left = integer(a, "windowLeft", -1, kMaxSafe);
  p.window_right = integer(a, "windowRight", -1, kMaxSafe);
  if (boolean(a, "causal")) p.window_right = p.window_right < 0 ? 0 : std::min<int64_t>(p.window_right, 0);

  if (present(a, "alibi")) {
    const Tensor s = tensor_arg(a, "alibi", dev);
    if (s.dtype != DType::kFloat32) bad("'alibi' must be float32");
    if (s.shape == std::vector<int64_t>{Hq}) {
      p.alibi_sb = 0;
      p.alibi_sh = s.strides[0];
    } else if (s.shape == std::vector<int64_t>{B, Hq}) {
      p.alibi_sb = s.strides[0];
      p.alibi_sh = s.strides[1];
    } else {
      bad("'alibi' must have shape [headsQ] or [batch, headsQ]");
    }
    p.alibi = static_cast<const float*>(s.ptr);
  }

  if (present(a, "mask")) {
    if (packed) bad("a varlen call takes no mask");
    const Tensor m = tensor_arg(a, "mask", dev);
    const bool is_bool = m.dtype == DType::kBool;
    if (!is_bool && m.dtype != DType::kFloat32 && m.dtype != call.dtype)
      bad("'mask' must be bool, float32 or the query's dtype");
    p.mask_kind = is_bool ? 2 : 1;
    p.mask_dtype = m.dtype;
    p.mask = m.ptr;
    // Broadcast to [B, Hq, Sq, Sk] (right-aligned): a size-1 dim repeats (stride 0).
    const int64_t target[4] = {B, Hq, p.seq_q, p.seq_k};
    const size_t lead = 4 - m.shape.size();
    for (size_t d = 0; d < 4; ++d) {
      if (d < lead) {
        p.mask_stride[d] = 0;
        continue;
      }
      const int64_t size = m.shape[d - lead];
      if (size != target[d] && size != 1)
        bad("'mask' " + shape_str(m.shape) + " does not broadcast to [B, Hq, Sq, Sk]");
      p.mask_stride[d] = size == target[d] && size != 1 ? m.strides[d - lead] : 0;
    }
  }

  if (present(a, "dropout")) {
    const Napi::Object o = a.Get("dropout").As<Napi::Object>();
    p.dropout = true;
    p.dropout_threshold = static_cast<uint32_t>(integer(o, "threshold", 0, 0xffffffffLL));
    p.dropout_offset = static_cast<uint32_t>(integer(o, "offset", 0, 0xffffffffLL));
    p.dropout_seed = big(o, "seed");
    p.keep_scale = number(o, "keepScale");
  }
  return call;
}

CallInfo read_backward(const Napi::Object& a, BwdParams& p) {
  CallInfo call = read_forward(a, p);
  if (p.block_size > 0) bad("paged K/V (a block table) is forward only");
  const int dev = call.device;
  const bool packed = !call.cu_q.empty();
  const Tensor q = tensor_arg(a, "q", dev), k = tensor_arg(a, "k", dev), v = tensor_arg(a, "v", dev);
  const Tensor out = tensor_arg(a, "out", dev);
  const Tensor dout = tensor_arg(a, "dout", dev), dq = tensor_arg(a, "dq", dev), dk = tensor_arg(a, "dk", dev),
               dv = tensor_arg(a, "dv", dev);
  expect_shape(dout, "dout", out.shape, call.dtype);
  expect_shape(dq, "dq", q.shape, call.dtype);
  expect_shape(dk, "dk", k.shape, call.dtype);
  expect_shape(dv, "dv", v.shape, call.dtype);
  p.dout = rows_of(dout, packed);
  p.dq = rows_of(dq, packed);
  p.dk = rows_of(dk, packed);
  p.dv = rows_of(dv, packed);
  p.max_seq_k = p.seq_k;
  if (packed) {
    p.max_seq_k = 0;
    for (int64_t b = 0; b < p.batch; ++b) p.max_seq_k = std::max<int64_t>(p.max_seq_k, call.cu_k[b + 1] - call.cu_k[b]);
  }

  if (present(a, "dbias")) {
    if (p.mask_kind != 1) bad("'dbias' needs an additive mask");
    const Tensor mask = tensor_arg(a, "mask", dev);
    const Tensor db = tensor_arg(a, "dbias", dev);
    expect_shape(db, "dbias", mask.shape, mask.dtype);
    // Contiguous: dbias_size (left-padded to 4 dims) is all the kernel knows of its layout.
    if (!contiguous(db)) bad("'dbias' must be contiguous");
    int64_t numel = 1;
    for (const int64_t n : db.shape) numel *= n;
    const size_t lead = 4 - db.shape.size();
    for (size_t d = 0; d < 4; ++d) p.dbias_size[d] = d < lead ? 1 : db.shape[d - lead];
    p.dbias = db.ptr;
    p.dbias_numel = numel;
  }
  return call;
}

}  // namespace attn::math
