// Host side of the TMA: 4-D tiled tensor maps with the 128-byte swizzle, encoded by the driver's
// cuTensorMapEncodeTiled. The entry point is looked up through the runtime (cudaGetDriverEntryPoint*), so
// the addon needs no link against libcuda. The swizzled boxes land in shared memory exactly as the tiles the
// kernels' wgmma descriptors read (128-byte rows, 16-byte chunks XOR-ed by row % 8, 1024-byte aligned).
#pragma once
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace attn::flash::sm90 {

using EncodeTiledFn = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                   const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                   CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

// The driver's cuTensorMapEncodeTiled (the CUDA 12.0 ABI), looked up once per process.
inline EncodeTiledFn encode_tiled_fn() {
  static const EncodeTiledFn fn = [] {
    void* ptr = nullptr;
    cudaDriverEntryPointQueryResult found{};
#if CUDART_VERSION >= 12050
    const cudaError_t e =
        cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &ptr, 12000, cudaEnableDefault, &found);
#else
    const cudaError_t e = cudaGetDriverEntryPoint("cuTensorMapEncodeTiled", &ptr, cudaEnableDefault, &found);
#endif
    if (e != cudaSuccess || found != cudaDriverEntryPointSuccess || ptr == nullptr)
      throw std::runtime_error(std::string("flash-cuda: the driver has no cuTensorMapEncodeTiled (") +
                               cudaGetErrorString(e) + "); the TMA kernels need a CUDA 12 driver");
    return reinterpret_cast<EncodeTiledFn>(ptr);
  }();
  return fn;
}

// A 4-D tensor at `base`: extents dims[0..3] (innermost first; dims[0] is contiguous), strides[i] the step of
// dims[i + 1] in elements, read in boxes of box[0..3] elements. Each stride must be a positive multiple of
// 16 bytes below 2^40 bytes, except that a dimension of extent 1 is never stepped, so its stride is replaced by
// a valid one. box[0] * elem_bytes must be 128 (one swizzle row). Throws std::invalid_argument when the driver
// rejects the description.
inline CUtensorMap tiled_map_4d(CUtensorMapDataType type, int elem_bytes, const void* base, const uint64_t (&dims)[4],
                                const int64_t (&strides)[3], const uint32_t (&box)[4], const char* what) {
  cuuint64_t gdim[4], gstride[3];
  cuuint32_t gbox[4], estride[4];
  for (int i = 0; i < 4; ++i) {
    gdim[i] = dims[i];
    gbox[i] = box[i];
    estride[i] = 1;
  }
  uint64_t prev = (dims[0] * uint64_t(elem_bytes) + 15) / 16 * 16;
  for (int i = 0; i < 3; ++i) {
    const uint64_t s = dims[i + 1] == 1 ? prev : uint64_t(strides[i]) * uint64_t(elem_bytes);
    if (strides[i] < 0 || s == 0 || s % 16 != 0 || s >= (uint64_t(1) << 40))
      throw std::invalid_argument(std::string("flash-cuda: ") + what +
                                  " cannot be read by the TMA (a stride is not a positive multiple of 16 bytes)");
    gstride[i] = s;
    prev = s;
  }
  CUtensorMap map;
  const CUresult r = encode_tiled_fn()(&map, type, 4, const_cast<void*>(base), gdim, gstride, gbox, estride,
                                       CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                       CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    throw std::invalid_argument(std::string("flash-cuda: cuTensorMapEncodeTiled rejected ") + what + " (CUresult " +
                                std::to_string(static_cast<int>(r)) + ")");
  return map;
}

// The last map one call site encoded, re-encoded only when the description changes: a loop of calls on the same
// tensors (a decode step, a benchmark, a layer's fixed buffers) pays a comparison of the description instead of
// the driver's encoding (about 0.13 us a map on the GPU host's Xeon). One per call site and thread (thread_local), so
// calls from several threads never share an entry.
class TiledMapCache {
 public:
  const CUtensorMap& get(CUtensorMapDataType type, int elem_bytes, const void* base, const uint64_t (&dims)[4],
                         const int64_t (&strides)[3], const uint32_t (&box)[4], const char* what) {
    Key key{type, elem_bytes, base, {}, {}, {}};
    for (int i = 0; i < 4; ++i) key.dims[i] = dims[i], key.box[i] = box[i];
    for (int i = 0; i < 3; ++i) key.strides[i] = strides[i];
    if (!valid_ || !(key == key_)) {
      valid_ = false;  // an encoding that throws leaves no stale entry behind
      map_ = tiled_map_4d(type, elem_bytes, base, dims, strides, box, what);
      key_ = key;
      valid_ = true;
    }
    return map_;
  }

 private:
  struct Key {
    CUtensorMapDataType type;
    int elem_bytes;
    const void* base;
    uint64_t dims[4];
    int64_t strides[3];
    uint32_t box[4];
    bool operator==(const Key& o) const {
      if (type != o.type || elem_bytes != o.elem_bytes || base != o.base) return false;
      for (int i = 0; i < 4; ++i)
        if (dims[i] != o.dims[i] || box[i] != o.box[i]) return false;
      for (int i = 0; i < 3; ++i)
        if (strides[i] != o.strides[i]) return false;
      return true;
    }
  };
  Key key_{};
  CUtensorMap map_{};
  bool valid_ = false;
};

}  // namespace attn::flash::sm90
