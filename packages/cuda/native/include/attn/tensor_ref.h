// A non-owning view of a device tensor as kernel packages receive it from TS.
#pragma once
#include <cstdint>

namespace attn {

enum class DType : int32_t { kFloat64 = 0, kFloat32 = 1, kFloat16 = 2, kBFloat16 = 3, kBool = 4, kInt32 = 5 };

struct TensorRef {
  void* data = nullptr;  // device address of element [0, 0, ...] (offset already applied)
  DType dtype = DType::kFloat32;
  int32_t rank = 0;
  int64_t sizes[4] = {1, 1, 1, 1};
  int64_t strides[4] = {0, 0, 0, 0};  // in elements
};

inline int element_size(DType d) {
  switch (d) {
    case DType::kFloat64:
      return 8;
    case DType::kFloat32:
    case DType::kInt32:
      return 4;
    case DType::kFloat16:
    case DType::kBFloat16:
      return 2;
    case DType::kBool:
      return 1;
  }
  return 0;
}

}  // namespace attn
