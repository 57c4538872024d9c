#include "args.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>

#include "dispatch.h"

namespace attn_cpu {
namespace {

constexpr double kMaxSafe = 9007199254740991.0;  // 2^53 - 1

[[noreturn]] void fail(const Napi::Env& env, const std::string& msg) {
  Napi::Error e = Napi::TypeError::New(env, "cpu-flash: " + msg);
  e.Set("code", Napi::String::New(env, "ATTN_CPU_FLASH_ARGS"));
  throw e;
}

Napi::Object get_object(const Napi::Env& env, const Napi::Object& o, const char* key) {
  Napi::Value v = o.Get(key);
  if (!v.IsObject()) fail(env, std::string(key) + " must be an object");
  return v.As<Napi::Object>();
}

double get_number(const Napi::Env& env, const Napi::Object& o, const char* key) {
  Napi::Value v = o.Get(key);
  if (!v.IsNumber()) fail(env, std::string(key) + " must be a number");
  return v.As<Napi::Number>().DoubleValue();
}

int64_t get_int(const Napi::Env& env, const Napi::Object& o, const char* key, int64_t lo, int64_t hi) {
  const double x = get_number(env, o, key);
  if (!(std::floor(x) == x) || x < static_cast<double>(lo) || x > static_cast<double>(hi))
    fail(env, std::string(key) + " must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                  "], got " + std::to_string(x));
  return static_cast<int64_t>(x);
}

bool get_bool(const Napi::Env& env, const Napi::Object& o, const char* key) {
  Napi::Value v = o.Get(key);
  if (!v.IsBoolean()) fail(env, std::string(key) + " must be a boolean");
  return v.As<Napi::Boolean>().Value();
}

std::string get_string(const Napi::Env& env, const Napi::Object& o, const char* key) {
  Napi::Value v = o.Get(key);
  if (!v.IsString()) fail(env, std::string(key) + " must be a string");
  return v.As<Napi::String>().Utf8Value();
}

DType parse_dtype(const Napi::Env& env, const std::string& s) {
  if (s == "float32") return DType::kFloat32;
  if (s == "float16") return DType::kFloat16;
  if (s == "bfloat16") return DType::kBFloat16;
  if (s == "float64") return DType::kFloat64;
  if (s == "bool") return DType::kBool;
  fail(env, "unknown dtype '" + s + "'");
}

napi_typedarray_type array_type_of(DType d) {
  switch (d) {
    case DType::kFloat64:
      return napi_float64_array;
    case DType::kFloat32:
      return napi_float32_array;
    case DType::kFloat16:
    case DType::kBFloat16:
      return napi_uint16_array;
    case DType::kBool:
      return napi_uint8_array;
  }
  return napi_uint8_array;
}

// The typed array at o[key].data with the element type of dtype; kept alive in call.keep.
Napi::TypedArray get_array(const Napi::Env& env, const Napi::Object& t, const char* key, DType dtype, Call& call) {
  Napi::Value v = t.Get("data");
  if (!v.IsTypedArray()) fail(env, std::string(key) + ".data must be a typed array");
  Napi::TypedArray a = v.As<Napi::TypedArray>();
  if (a.TypedArrayType() != array_type_of(dtype))
    fail(env, std::string(key) + ".data has the wrong element type for its dtype");
  call.keep.emplace_back(Napi::Persistent(a.As<Napi::Object>()));
  return a;
}

char* array_base(const Napi::TypedArray& a) { return static_cast<char*>(a.ArrayBuffer().Data()) + a.ByteOffset(); }

// o[key] = { data, offset, strides: [4] } with logical sizes `sizes`: every element it can address
// must lie inside data.
View4 parse_view(const Napi::Env& env, const Napi::Object& o, const char* key, DType dtype, const int64_t sizes[4],
                 Call& call) {
  const Napi::Object t = get_object(env, o, key);
  const Napi::TypedArray a = get_array(env, t, key, dtype, call);
  const int64_t len = static_cast<int64_t>(a.ElementLength());
  const int64_t offset = get_int(env, t, "offset", 0, len);
  Napi::Value sv = t.Get("strides");
  if (!sv.IsArray() || sv.As<Napi::Array>().Length() != 4) fail(env, std::string(key) + ".strides must be 4 integers");
  const Napi::Array sa = sv.As<Napi::Array>();
  View4 view;
  view.dtype = dtype;
  int64_t lo = offset, hi = offset;
  bool empty = false;
  for (uint32_t k = 0; k < 4; ++k) {
    Napi::Value e = sa.Get(k);
    const double s = e.IsNumber() ? e.As<Napi::Number>().DoubleValue() : NAN;
    if (!(std::floor(s) == s) || std::fabs(s) > kMaxSafe) fail(env, std::string(key) + ".strides must be integers");
    view.strides[k] = static_cast<int64_t>(s);
    if (sizes[k] == 0) empty = true;
    const double reach = static_cast<double>(sizes[k] - 1) * s;
    if (std::fabs(reach) > kMaxSafe) fail(env, std::string(key) + " addresses beyond its data");
    if (reach < 0)
      lo += static_cast<int64_t>(reach);
    else
      hi += static_cast<int64_t>(reach);
  }
  if (!empty && (lo < 0 || hi >= len))
    fail(env, std::string(key) + " addresses elements [" + std::to_string(lo) + ", " + std::to_string(hi) +
                  "] outside its data of " + std::to_string(len) + " elements");
  view.data = array_base(a) + offset * dtype_bytes(dtype);
  return view;
}

// A contiguous fp32 array o[key] = { data: Float32Array, offset } of at least n elements.
float* parse_f32(const Napi::Env& env, const Napi::Object& o, const char* key, int64_t n, Call& call) {
  const Napi::Object t = get_object(env, o, key);
  const Napi::TypedArray a = get_array(env, t, key, DType::kFloat32, call);
  const int64_t len = static_cast<int64_t>(a.ElementLength());
  const int64_t offset = get_int(env, t, "offset", 0, len);
  if (len - offset < n) fail(env, std::string(key) + " needs " + std::to_string(n) + " elements");
  return reinterpret_cast<float*>(array_base(a)) + offset;
}

// o.varlen = { cuQ: Int32Array, cuK: Int32Array } (B + 1 offsets each), or absent for dense
// calls. Offsets start at 0, never decrease, and no sequence exceeds Sq / Sk (the longest).
// Returns the totals of query and key tokens (dense: 0).
void parse_varlen(const Napi::Env& env, const Napi::Object& o, const Dims& d, Call& call, Varlen& vl, int64_t* total_q,
                  int64_t* total_k) {
  *total_q = *total_k = 0;
  Napi::Value v = o.Get("varlen");
  if (v.IsNull() || v.IsUndefined()) return;
  if (!v.IsObject()) fail(env, "varlen must be an object or null");
  const Napi::Object vo = v.As<Napi::Object>();
  const char* keys[2] = {"cuQ", "cuK"};
  const int64_t maxlen[2] = {d.Sq, d.Sk};
  const int32_t* cu[2];
  for (int w = 0; w < 2; ++w) {
    Napi::Value a = vo.Get(keys[w]);
    if (!a.IsTypedArray() || a.As<Napi::TypedArray>().TypedArrayType() != napi_int32_array)
      fail(env, std::string("varlen.") + keys[w] + " must be an Int32Array");
    Napi::TypedArray ta = a.As<Napi::TypedArray>();
    if (static_cast<int64_t>(ta.ElementLength()) < d.B + 1)
      fail(env, std::string("varlen.") + keys[w] + " needs B + 1 offsets");
    call.keep.emplace_back(Napi::Persistent(ta.As<Napi::Object>()));
    cu[w] = reinterpret_cast<const int32_t*>(array_base(ta));
    if (cu[w][0] != 0) fail(env, std::string("varlen.") + keys[w] + " must start at 0");
    for (int64_t b = 0; b < d.B; ++b) {
      const int64_t len = static_cast<int64_t>(cu[w][b + 1]) - cu[w][b];
      if (len < 0 || len > maxlen[w])
        fail(env, std::string("varlen.") + keys[w] + " must not decrease, and no sequence may exceed the max length");
    }
  }
  vl.cu_q = cu[0];
  vl.cu_k = cu[1];
  *total_q = cu[0][d.B];
  *total_k = cu[1][d.B];
}

// o.sequsedK = Int32Array of B counts, or absent. Each row's count lies in [0, its key count]
// (dense: Sk; varlen: cu_k[b + 1] - cu_k[b]); the counts are copied into call.used_k.
void parse_seqused(const Napi::Env& env, const Napi::Object& o, const Dims& d, const Varlen& vl, Call& call,
                   SequsedK& su) {
  Napi::Value v = o.Get("sequsedK");
  if (v.IsNull() || v.IsUndefined()) return;
  if (!v.IsTypedArray() || v.As<Napi::TypedArray>().TypedArrayType() != napi_int32_array)
    fail(env, "sequsedK must be an Int32Array or null");
  const Napi::TypedArray ta = v.As<Napi::TypedArray>();
  if (static_cast<int64_t>(ta.ElementLength()) != d.B) fail(env, "sequsedK needs B counts");
  const int32_t* used = reinterpret_cast<const int32_t*>(array_base(ta));
  call.used_k.assign(used, used + d.B);
  for (int64_t b = 0; b < d.B; ++b) {
    const int64_t keys = vl.cu_k ? static_cast<int64_t>(vl.cu_k[b + 1]) - vl.cu_k[b] : d.Sk;
    if (call.used_k[b] < 0 || call.used_k[b] > keys)
      fail(env, "sequsedK[" + std::to_string(b) + "] = " + std::to_string(call.used_k[b]) + " is outside [0, " +
                    std::to_string(keys) + "], the keys of its row");
  }
  su.used_k = call.used_k.data();
}

// o.paged = { table: Int32Array, tableStride, blockSize, numBlocks, keyStart: Int32Array | null },
// or absent; forward only. Row b reads key positions [keyStart[b], keyStart[b] + keys(b)) of its
// blocks, keys(b) its used count (sequsedK), else its varlen key count, else Sk; every table entry
// those positions use lies in [0, numBlocks). The table and keyStart are copied into the call.
// Returns numBlocks through num_blocks (the k and v views are checked against the pool), 0 when not paged.
void parse_paged(const Napi::Env& env, const Napi::Object& o, const Dims& d, const Varlen& vl, const SequsedK& su,
                 Call& call, PagedKv& pg, int64_t* num_blocks) {
  *num_blocks = 0;
  Napi::Value v = o.Get("paged");
  if (v.IsNull() || v.IsUndefined()) return;
  if (!v.IsObject()) fail(env, "paged must be an object or null");
  const Napi::Object po = v.As<Napi::Object>();
  const int64_t big = (static_cast<int64_t>(1) << 31) - 1;
  const int64_t stride = get_int(env, po, "tableStride", 1, big);
  const int64_t bs = get_int(env, po, "blockSize", 1, big);
  const int64_t nb = get_int(env, po, "numBlocks", 1, big);
  const auto int32s = [&](const char* key, int64_t n, std::vector<int32_t>& copy) -> bool {
    Napi::Value t = po.Get(key);
    if (t.IsNull() || t.IsUndefined()) return false;
    if (!t.IsTypedArray() || t.As<Napi::TypedArray>().TypedArrayType() != napi_int32_array)
      fail(env, std::string("paged.") + key + " must be an Int32Array");
    const Napi::TypedArray ta = t.As<Napi::TypedArray>();
    if (static_cast<int64_t>(ta.ElementLength()) < n)
      fail(env, std::string("paged.") + key + " needs " + std::to_string(n) + " entries");
    const int32_t* a = reinterpret_cast<const int32_t*>(array_base(ta));
    copy.assign(a, a + n);
    return true;
  };
  if (!int32s("table", d.B * stride, call.block_table)) fail(env, "paged.table must be an Int32Array");
  const bool has_start = int32s("keyStart", d.B, call.key_start);
  for (int64_t b = 0; b < d.B; ++b) {
    const int64_t keys = su.used_k ? su.used_k[b] : vl.cu_k ? static_cast<int64_t>(vl.cu_k[b + 1]) - vl.cu_k[b] : d.Sk;
    const int64_t start = has_start ? call.key_start[b] : 0;
    if (start < 0) fail(env, "paged.keyStart entries must be >= 0");
    const int64_t end = start + keys;  // positions [start, end) are read
    if ((end + bs - 1) / bs > stride)
      fail(env, "row " + std::to_string(b) + " reads key positions up to " + std::to_string(end) + ", past its " +
                    std::to_string(stride) + " blocks of " + std::to_string(bs));
    for (int64_t i = keys > 0 ? start / bs : 0; i < (end + bs - 1) / bs; ++i) {
      const int32_t e = call.block_table[b * stride + i];
      if (e < 0 || e >= nb)
        fail(env, "paged.table[" + std::to_string(b) + ", " + std::to_string(i) + "] = " + std::to_string(e) +
                      " is outside the pool of " + std::to_string(nb) + " blocks");
    }
  }
  pg.table = call.block_table.data();
  pg.table_stride = stride;
  pg.block_size = bs;
  pg.key_start = has_start ? call.key_start.data() : nullptr;
  *num_blocks = nb;
}

void parse_common(const Napi::Env& env, const Napi::Object& o, Call& call, Dims& d, DType& dtype, ScoreMods& m,
                  int& threads) {
  const std::string isa = get_string(env, o, "isa");
  if (!parse_isa(isa, &call.isa)) fail(env, "unknown isa '" + isa + "'");
  threads = static_cast<int>(get_int(env, o, "threads", 1, 1024));
  dtype = parse_dtype(env, get_string(env, o, "dtype"));
  if (dtype != DType::kFloat32 && dtype != DType::kFloat16 && dtype != DType::kBFloat16)
    fail(env, "dtype must be float32, float16 or bfloat16");
  // The limits of src/flash/limits.ts (CPU_FLASH_LIMITS), which limits.test.ts checks against these.
  const int64_t big = (static_cast<int64_t>(1) << 31) - 1;
  d.B = get_int(env, o, "B", 1, big);
  d.Hq = get_int(env, o, "Hq", 1, big);
  d.Hk = get_int(env, o, "Hk", 1, big);
  d.Sq = get_int(env, o, "Sq", 1, big);
  d.Sk = get_int(env, o, "Sk", 1, big);
  d.D = get_int(env, o, "D", 1, 1 << 16);
  d.Dv = get_int(env, o, "Dv", 1, 1 << 16);
  if (d.Hq % d.Hk != 0) fail(env, "Hq must be a multiple of Hk");

  m.scale = static_cast<float>(get_number(env, o, "scale"));
  if (!std::isfinite(m.scale)) fail(env, "scale must be finite");
  m.softcap = static_cast<float>(get_number(env, o, "softcap"));
  if (!std::isfinite(m.softcap) || m.softcap < 0.f) fail(env, "softcap must be finite and >= 0");
  m.causal = get_bool(env, o, "causal");
  m.lower_right = get_bool(env, o, "lowerRight");
  m.align_offset = m.lower_right ? d.Sk - d.Sq : 0;  // varlen: per sequence (varlen.cpp)
  m.window_left = get_int(env, o, "windowLeft", -1, big);
  m.window_right = get_int(env, o, "windowRight", -1, big);

  Napi::Value mask = o.Get("mask");
  if (!mask.IsNull() && !mask.IsUndefined()) {
    if (!mask.IsObject()) fail(env, "mask must be an object or null");
    const Napi::Object mo = mask.As<Napi::Object>();
    const std::string kind = get_string(env, mo, "kind");
    if (kind != "bool" && kind != "additive") fail(env, "mask.kind must be 'bool' or 'additive'");
    m.has_mask = true;
    m.mask_is_bool = kind == "bool";
    const DType mdt = parse_dtype(env, get_string(env, mo, "dtype"));
    if (m.mask_is_bool != (mdt == DType::kBool)) fail(env, "mask.dtype does not match mask.kind");
    const int64_t sizes[4] = {d.B, d.Hq, d.Sq, d.Sk};
    m.mask = parse_view(env, o, "mask", mdt, sizes, call);
  }
  Napi::Value alibi = o.Get("alibi");
  if (!alibi.IsNull() && !alibi.IsUndefined()) {
    if (!alibi.IsObject()) fail(env, "alibi must be an object or null");
    const Napi::Object ao = alibi.As<Napi::Object>();
    m.alibi_sb = get_int(env, ao, "strideB", 0, big);
    m.alibi_sh = get_int(env, ao, "strideH", 0, big);
    m.alibi = parse_f32(env, o, "alibi", (d.B - 1) * m.alibi_sb + (d.Hq - 1) * m.alibi_sh + 1, call);
  }
  Napi::Value drop = o.Get("dropout");
  if (!drop.IsNull() && !drop.IsUndefined()) {
    if (!drop.IsObject()) fail(env, "dropout must be an object or null");
    const Napi::Object dob = drop.As<Napi::Object>();
    const int64_t u32 = 0xffffffffLL;
    m.has_dropout = true;
    m.seed = static_cast<uint64_t>(get_int(env, dob, "seedLo", 0, u32)) |
             (static_cast<uint64_t>(get_int(env, dob, "seedHi", 0, u32)) << 32);
    m.rng_offset = static_cast<uint32_t>(get_int(env, dob, "offset", 0, u32));
    m.threshold = static_cast<uint32_t>(get_int(env, dob, "threshold", 0, u32));
    m.keep_scale = static_cast<float>(get_number(env, dob, "keepScale"));
    if (!std::isfinite(m.keep_scale) || m.keep_scale < 1.f) fail(env, "dropout.keepScale must be finite and >= 1");
  }
  kernels_for(call.isa);  // throws std::invalid_argument when the level cannot run here
}

// The logical sizes every view is checked against: dense [B, H, S, D]; varlen packed
// [total, H, D] seen as [1, H, total, D] (strides [0, head, token, dim]).
struct Sizes {
  int64_t q[4], k[4], v[4], o[4];
  int64_t lse, lse_sb, lse_sh;
};
Sizes sizes_of(const Dims& d, bool varlen, int64_t tq, int64_t tk) {
  const int64_t bq = varlen ? 1 : d.B, sq = varlen ? tq : d.Sq, sk = varlen ? tk : d.Sk;
  Sizes z{{bq, d.Hq, sq, d.D}, {bq, d.Hk, sk, d.D}, {bq, d.Hk, sk, d.Dv}, {bq, d.Hq, sq, d.Dv}, 0, 0, 0};
  z.lse = varlen ? d.Hq * tq : d.B * d.Hq * d.Sq;
  z.lse_sb = varlen ? 0 : d.Hq * d.Sq;
  z.lse_sh = varlen ? tq : d.Sq;
  return z;
}

// What forward and backward descriptors share: dims, options, varlen offsets, q, k, v, out and lse.
template <typename Problem>
Sizes parse_shared(const Napi::Env& env, const Napi::Object& o, Call& call, Problem& p) {
  parse_common(env, o, call, p.dims, p.dtype, p.mods, p.threads);
  int64_t tq, tk;
  parse_varlen(env, o, p.dims, call, p.varlen, &tq, &tk);
  parse_seqused(env, o, p.dims, p.varlen, call, p.seqused);
  Sizes z = sizes_of(p.dims, p.varlen.cu_q != nullptr, tq, tk);
  if constexpr (std::is_same_v<Problem, FwdProblem>) {
    int64_t nb;
    parse_paged(env, o, p.dims, p.varlen, p.seqused, call, p.paged, &nb);
    if (p.paged.table) {  // block pools seen as [numBlocks, H, blockSize, D]
      const int64_t bs = p.paged.block_size;
      const int64_t k[4] = {nb, p.dims.Hk, bs, p.dims.D}, v[4] = {nb, p.dims.Hk, bs, p.dims.Dv};
      std::copy(k, k + 4, z.k);
      std::copy(v, v + 4, z.v);
    }
  } else {
    Napi::Value pv = o.Get("paged");
    if (!pv.IsNull() && !pv.IsUndefined()) fail(env, "paged K/V is forward only");
  }
  p.q = parse_view(env, o, "q", p.dtype, z.q, call);
  p.k = parse_view(env, o, "k", p.dtype, z.k, call);
  p.v = parse_view(env, o, "v", p.dtype, z.v, call);
  p.out = parse_view(env, o, "out", p.dtype, z.o, call);
  p.lse = parse_f32(env, o, "lse", z.lse, call);
  p.lse_sb = z.lse_sb;
  p.lse_sh = z.lse_sh;
  if (p.varlen.cu_q && p.mods.has_mask) fail(env, "varlen calls take no mask");
  return z;
}

Napi::Object descriptor(const Napi::Env& env, const Napi::Value& desc) {
  if (!desc.IsObject()) fail(env, "the call descriptor must be an object");
  return desc.As<Napi::Object>();
}

}  // namespace

Call parse_forward(const Napi::Env& env, const Napi::Value& desc) {
  const Napi::Object o = descriptor(env, desc);
  Call call;
  parse_shared(env, o, call, call.fwd);
  return call;
}

Call parse_backward(const Napi::Env& env, const Napi::Value& desc) {
  const Napi::Object o = descriptor(env, desc);
  Call call;
  call.backward = true;
  BwdProblem& p = call.bwd;
  const Sizes z = parse_shared(env, o, call, p);
  const Dims& d = p.dims;
  p.dout = parse_view(env, o, "dout", p.dtype, z.o, call);
  p.dq = parse_view(env, o, "dq", p.dtype, z.q, call);
  p.dk = parse_view(env, o, "dk", p.dtype, z.k, call);
  p.dv = parse_view(env, o, "dv", p.dtype, z.v, call);
  Napi::Value db = o.Get("dbias");
  if (!db.IsNull() && !db.IsUndefined()) {
    if (!p.mods.has_mask || p.mods.mask_is_bool) fail(env, "dbias needs an additive mask");
    Napi::Value dims = db.IsObject() ? db.As<Napi::Object>().Get("dims") : Napi::Value();
    if (dims.IsEmpty() || !dims.IsArray() || dims.As<Napi::Array>().Length() != 4)
      fail(env, "dbias.dims must be 4 integers");
    const int64_t full[4] = {d.B, d.Hq, d.Sq, d.Sk};
    int64_t n = 1;
    for (uint32_t k = 0; k < 4; ++k) {
      Napi::Value e = dims.As<Napi::Array>().Get(k);
      const double x = e.IsNumber() ? e.As<Napi::Number>().DoubleValue() : NAN;
      if (!(x == 1.0 || x == static_cast<double>(full[k])))
        fail(env, "each dbias.dims entry must be 1 or the full size");
      p.dbias_dims[k] = static_cast<int64_t>(x);
      n *= p.dbias_dims[k];
    }
    p.dbias = parse_f32(env, o, "dbias", n, call);
  }
  return call;
}

}  // namespace attn_cpu
