// Everything one backward launch sequence needs. The forward's parameters (shapes, q/k/v/out/lse
// strides, every score feature) are reused as they are: backward must see exactly the scores the
// forward saw, so both read them from the same FwdParams, filled by the same code (dispatch.cu).
#pragma once
#include <cstdint>

#include "common/fwd_params.h"

namespace attn::flash {

struct BwdParams {
  FwdParams f;  // f.o = the forward's out, f.lse = its logsumexp (inputs here)

  const void* dout;  // gradient of out, [B, Hq, Sq, D] (varlen [total_q, Hq, D]), any row/head strides
  int64_t do_batch_stride, do_head_stride, do_row_stride;
  void* dq;
  int64_t dq_batch_stride, dq_head_stride, dq_row_stride;
  void* dk;
  int64_t dk_batch_stride, dk_head_stride, dk_row_stride;
  void* dv;
  int64_t dv_batch_stride, dv_head_stride, dv_row_stride;

  // Dsum = rowsum(dO * O), float32, one per query row, indexed like lse (f.lse_*_stride).
  float* dsum;
  // dQ accumulated in float32 with atomics, [rows][dq_accum_stride] with rows indexed like lse; converted (and
  // scaled) into dq by the postprocessing kernel. Null in deterministic mode unless the dK/dV kernel orders its
  // additions (dq_turns).
  float* dq_accum;
  int dq_accum_stride;
  // Deterministic mode on the TMA dK/dV kernel: one int32 per (batch, query head, query block of
  // dq_turn_rows rows), zeroed before the kernel, counting the key blocks that have added into that block's
  // rows; key block n adds after the ones before it (sm90/flash_bwd_sm90_tma_ws_kernel.h). Null otherwise.
  int* dq_turns;
  int dq_turn_rows;

  float scale;         // the softmax scale: dS is the gradient of the scaled score, dQ = scale * dS K
  bool deterministic;  // dQ summed in a fixed order: by its own kernel per query block, or in turns (dq_turns)
  // The call has no softcap, ALiBi or dropout, so its interior tiles may take grad_element's plain form
  // (bwd_scores.h plain_tile decides per tile). Set once per call on the host; also a runtime value the
  // kernels test before plain_tile, which is the code shape ptxas allocates without spills at 255 registers
  // (folding the test into plain_tile alone spilled 20-52 bytes in the 2-D tiled D128/D256 kernels).
  bool plain_tiles;
  int stages;    // 1 or 2 shared-memory stages of (Q, dO) in the dK/dV kernel (2: prefetch)
  int n_blocks;  // key blocks of the dK/dV kernel
  int m_blocks;  // query blocks of the deterministic dQ kernel
};

}  // namespace attn::flash
