// Task ordering shared by the forward kernels. Each thread runs a contiguous range of the task list
// (thread_pool.h, Claim::kRanges), so under causal or windowed attention a range must not hold only
// long or only short query blocks: a head's blocks are listed largest, smallest, second largest,
// second smallest, ... (by the key blocks they visit), and any run of consecutive pairs holds about
// the same work. With blocks sorted largest first instead, the thread given a head's first blocks
// ran the longest range and the others stole its tasks one at a time (and with them another head's
// K/V): causal S 2k at 16 threads took as long as the non-causal call (bf16, AMX host).
#pragma once
#include <cstdint>

#include "kernels/rows.h"
#include "memory.h"

namespace attn_cpu {
namespace ATTN_ISA {

// order[0..nqb) = query block indices, largest and smallest work alternating; work[0..nqb) is scratch.
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
  // order is by decreasing work (insertion sort: nqb is small); interleave its two ends.
  for (int64_t i = 0; i < nqb; ++i) work[i] = order[i];
  for (int64_t i = 0, lo = 0, hi = nqb - 1; lo <= hi; ++i) order[i] = (i % 2 == 0) ? work[lo++] : work[hi--];
}

}  // namespace ATTN_ISA
}  // namespace attn_cpu
