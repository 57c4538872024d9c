// The stable codes of AttnInputError raised by sdpa's input validation (normalizeParams and the
// varlen form). Users may match on them; tests cover each one.
export const VALIDATION_CODES = [
  'ATTN_TYPE', // an argument is not a Tensor / options not an object
  'ATTN_OPTION', // unknown option key or an option of the wrong type
  'ATTN_DISPOSED', // a tensor was disposed (raised as DisposedError)
  'ATTN_DTYPE', // query is not a floating dtype
  'ATTN_DTYPE_MISMATCH', // query, key and value dtypes differ
  'ATTN_DEVICE_MISMATCH', // tensors on different devices
  'ATTN_RANK', // dense inputs must be [B, H, S, D]; varlen [total, H, D]
  'ATTN_BATCH', // batch sizes differ
  'ATTN_HEADS', // key/value head counts differ, or do not divide the query heads
  'ATTN_GQA', // Hk != Hq without enableGqa
  'ATTN_HEAD_DIM', // query/key head dims differ, or zero
  'ATTN_SEQ_LEN', // key and value sequence lengths differ
  'ATTN_MASK_DTYPE', // mask not bool, float32 or the query dtype; not bool with float8_e4m3 inputs
  'ATTN_MASK_SHAPE', // mask rank > 4 or not broadcastable to [B, Hq, Sq, Sk]
  'ATTN_DROPOUT', // dropoutP outside [0, 1), bad seed or offset
  'ATTN_SCALE', // scale zero, NaN or infinite
  'ATTN_WINDOW', // window not [left, right] integers >= -1
  'ATTN_SOFTCAP', // softcap negative or not finite
  'ATTN_ALIBI', // slopes not float32 [Hq] or [B, Hq]
  'ATTN_VARLEN', // cuSeqlens / maxSeqlen inconsistent
  'ATTN_SEQUSED_K', // sequsedK not int32 [B], or a length outside [0, the row's key count]
  'ATTN_BLOCK_TABLE', // blockTable not int32 [B, maxBlocks], a read entry outside the pool, pools unlike, or requiresGrad
  'ATTN_KV_CACHE', // sdpaKvCache: cache shapes, cacheSeqlens, kNew/vNew, rotary, cacheBatchIdx or leftpadK inconsistent, an append past the cache, or requiresGrad
  'ATTN_SIZE', // sizes beyond what indices or the dropout counter can address
  'ATTN_UNKNOWN_BACKEND', // `backends` names an unregistered backend
  'ATTN_UNKNOWN_KERNEL', // `kernel` names no kernel of a registered backend (of `backends`, when given)
  'ATTN_GRAD_OUT', // sdpaBackward: gradOut does not match the forward output
  'ATTN_NO_BACKWARD', // sdpaBackward: the backend that ran forward has no backward
  'ATTN_FORWARD_RESULT', // sdpaBackward: fwd is not an unchanged result of sdpaForward / sdpaVarlen
  'ATTN_SAVED', // sdpaBackwardFrom: out or logsumexp not of the call's shape, dtype or device
  'ATTN_STORAGE', // a host tensor's ArrayBuffer was detached or shrunk after the tensor was made
  'ATTN_OUT', // out: not the output's shape, dtype (bfloat16 for float8_e4m3 inputs) or device, not contiguous, sharing memory with an input, or with requiresGrad
  'ATTN_DESCALE', // descale missing for float8_e4m3 inputs, given for other inputs, or a factor not a finite number > 0
  'ATTN_FLOAT8', // float8_e4m3 inputs where the fp8 forward does not go: requiresGrad, backward, sdpaVarlen, sdpaKvCache
] as const;

export type ValidationCode = (typeof VALIDATION_CODES)[number];

// The stable codes of GraphError, raised by a device runtime's graph capture and replay
// (@attn/cuda's captureGraph). Tests cover each one.
export const GRAPH_CODES = [
  'ATTN_GRAPH_DISPOSED', // replay() after dispose()
  'ATTN_GRAPH_TENSOR_DISPOSED', // replay() after a tensor the graph reads or writes was disposed
  'ATTN_GRAPH_CAPTURE_UNSUPPORTED', // during capture: a host read or write, a sync, emptyCache, another stream
  'ATTN_GRAPH_NESTED', // captureGraph inside captureGraph
  'ATTN_GRAPH_DEVICE', // work on another device during capture, or replay on another device's stream
  'ATTN_GRAPH_ASYNC', // the captured function returned a promise
  'ATTN_GRAPH_CAPTURE_FAILED', // the runtime invalidated the capture or could not instantiate the graph
] as const;

export type GraphCode = (typeof GRAPH_CODES)[number];
