// Task ordering shared by the forward kernels: query blocks sorted by how many key blocks they
// visit, largest first, so that under causal or windowed attention the short tasks come last and
// the threads finish together.
#pragma once
#include <cstdint>

#include "kernels/rows.h"
#include "memory.h"

namespace attn_cpu {
namespace ATTN_ISA {

// order[0..nqb) = query block indices by decreasing work (insertion sort: nqb is small).
inline void order_query_blocks(const ScoreMods& md, const Dims& d, int64_t bm, int64_t bn, int64_t* order,
                               int64_t* work) {
  const int64_t nqb = (d.Sq + bm - 1) / bm;
  for (int64_t qb = 0; qb < nqb; ++qb) {
    const int64_t i0 = qb * bm, i1 = (d.Sq < i0 + bm ? d.Sq : i0 + bm) - 1;
    const RowRange a = key_range(md, d.Sk, i0), z = key_range(md, d.Sk, i1);
    const int64_t w = a.lo <= z.hi ? z.hi / bn - a.lo / bn + 1 : 0;
    int64_t k = qb;
    while (k > 0 && work[k - 1] < w) {
      work[k] = work[k - 1];
      order[k] = order[k - 1];
      --k;
    }
    work[k] = w;
    order[k] = qb;
  }
}

}  // namespace ATTN_ISA
}  // namespace attn_cpu
