// What the user passes (SdpaOptions) and what backends receive after normalization (SdpaParams).
import type { Device } from './device.js';
import type { FloatDType } from './dtype.js';
import type { Tensor } from './tensor.js';

/**
 * Where the causal diagonal (and the window and ALiBi distances) is anchored when Sq != Sk.
 * 'upperLeft' (PyTorch's is_causal): query i sees keys 0..i.
 * 'lowerRight' (FlashAttention's): query i sees keys 0..i + (Sk - Sq).
 */
export type Alignment = 'upperLeft' | 'lowerRight';

export interface SdpaOptions {
  /** Boolean (true = attend) or additive float mask, broadcastable to [B, Hq, Sq, Sk]. */
  attnMask?: Tensor | null;
  /** In [0, 1). */
  dropoutP?: number;
  isCausal?: boolean;
  /** Anchors causal, window and ALiBi; default 'upperLeft' (as PyTorch). */
  alignment?: Alignment;
  /** Default 1 / sqrt(D). */
  scale?: number;
  /** Allows Hk < Hq with Hq % Hk == 0 (grouped-query attention). */
  enableGqa?: boolean;
  /** Sliding window [left, right] in keys around the (aligned) diagonal; -1 = unbounded on that side. */
  window?: readonly [number, number] | null;
  /** float32, [Hq] or [B, Hq]: adds -slope * |i + offset - j| to the scores. */
  alibiSlopes?: Tensor | null;
  /** > 0: scores become softcap * tanh(scores / softcap) before masks and ALiBi. */
  softcap?: number;
  /**
   * int32 [B], on the query's device: keys used per batch row (dense) or sequence (varlen), as
   * FlashAttention's seqused_k. Row b behaves exactly as if its key and value held only their first
   * sequsedK[b] keys: the causal diagonal, the window and ALiBi distances anchor at that length, the
   * keys after it get no weight and their gradients are 0. 0 <= sequsedK[b] <= the row's key count.
   */
  sequsedK?: Tensor | null;
  /** Philox key; default: a fresh random seed per call (returned in the result). */
  dropoutSeed?: bigint | number;
  /** Philox counter word 3; default 0. */
  dropoutOffset?: number;
  /** Restrict (and order) the candidate backends for this call. */
  backends?: readonly string[];
  /**
   * Run this kernel family of the backend that declares it (`attn doctor` lists each backend's
   * kernels, e.g. flash-cuda 'sm90' / 'sm80', cpu-flash 'avx2' / 'avx512' / 'amx'): for benchmarks
   * and A/B runs. It implies that backend (with `backends`, one of them must declare it). A name no
   * registered backend declares is an AttnInputError (ATTN_UNKNOWN_KERNEL); a kernel that cannot run
   * this call on this device declines it with its reason (NoBackendError), never a silent fallback.
   * Backward runs the same family. Default: the backend's dispatcher picks.
   */
  kernel?: string;
  /**
   * The dequantization factors of float8_e4m3 query, key and value, one per tensor (FlashAttention-3's
   * q_descale, k_descale, v_descale): the call attends the values `descale.q * q`, `descale.k * k` and
   * `descale.v * v`, and its output is bfloat16 (as FlashAttention-3's fp8 forward writes). Required
   * exactly when the inputs are float8_e4m3; each a finite number > 0 (ATTN_DESCALE). float8_e4m3
   * inputs go through sdpa, sdpaForward, sdpaForwardAsync and explain only, for inference (no
   * requiresGrad, no backward), with a bool mask if any (ATTN_FLOAT8, ATTN_MASK_DTYPE); only backends
   * that declare `float8Inputs` take them (the others decline by the rule float8Inputs).
   */
  descale?: Descale | null;
  /** Will sdpaBackward be called on the result? Backends without backward decline. */
  requiresGrad?: boolean;
  /** Backward accumulates in a fixed order (bitwise reproducible). */
  deterministic?: boolean;
  /**
   * Where the output goes (PyTorch's out=): a live, contiguous tensor of the output's shape (dense
   * [B, Hq, Sq, Dv], varlen [totalQ, Hq, Dv]), the query's dtype (bfloat16 for float8_e4m3 inputs) and device, sharing no memory with
   * any input. The call writes into it and returns it as `out`. Not with requiresGrad (backward reads
   * the forward output, which a reused buffer would have overwritten).
   */
  out?: Tensor | null;
  /**
   * true: the values of the device index tensors (cuSeqlensQ/K, sequsedK, blockTable) are not read
   * on the host: no synchronizing copy per call. They are checked for dtype, shape, contiguity and
   * device only, as during graph capture, and kernels clamp what they read (a length past its row
   * reads fewer keys, never outside the tensors). maxSeqlenQ/K must then bound the lengths (as
   * FlashAttention's varlen API takes them). Backends that plan from host copies decline
   * (indexValuesOnHost). CPU tensors' values are host memory: they are read and checked whatever
   * this says.
   */
  indexValuesOnDevice?: boolean;
}

/** Dequantization factors of float8_e4m3 query, key and value (SdpaOptions.descale). */
export interface Descale {
  readonly q: number;
  readonly k: number;
  readonly v: number;
}

/** sdpaVarlen takes no mask and, for now, no float8_e4m3 inputs (so no descale). */
export interface VarlenOptions extends Omit<SdpaOptions, 'attnMask' | 'descale'> {
  /** int32 [B + 1], offsets of each sequence in the packed query. */
  cuSeqlensQ: Tensor;
  cuSeqlensK: Tensor;
  maxSeqlenQ: number;
  maxSeqlenK: number;
  /**
   * Paged K/V (FlashAttention's block_table): int32 [B, maxBlocksPerSeq] on the query's device. Key
   * and value are then [numBlocks, blockSize, Hk, D] and [numBlocks, blockSize, Hk, Dv], and key j of
   * sequence b lives in block blockTable[b, floor(j / blockSize)], row j % blockSize. cuSeqlensK then
   * gives only the key count of each sequence (its offsets address nothing); sequsedK may shorten it.
   * Entries past a sequence's last block are never read. Inference only (no requiresGrad).
   */
  blockTable?: Tensor | null;
}

/**
 * sdpaKvCache's options (FlashAttention's flash_attn_with_kvcache). q is [B, Sq, Hq, D]; the caches
 * are [Bc, Sc, Hk, D | Dv] (contiguous: any strides, each row a sequence) or, with blockTable, block
 * pools [numBlocks, blockSize, Hk, D | Dv]. Causal, window and ALiBi are aligned lower-right (as
 * decode: the last query sits on the last key). Inference only: no dropout, no mask, no backward.
 */
export interface KvCacheOptions {
  /**
   * int32 [B]: keys already in row b of the cache (its end position, leftpadK included). Default:
   * every row is full (Sc, or maxBlocksPerSeq * blockSize with a blockTable).
   */
  cacheSeqlens?: Tensor | null;
  /**
   * [B, Snew, Hk, D] and [B, Snew, Hk, Dv], both or neither: written into the cache (mutated in
   * place, as FlashAttention does) at positions cacheSeqlens[b] .. cacheSeqlens[b] + Snew - 1 before
   * attending, kNew rotated first when rotary tables are given. Row b then attends to
   * cacheSeqlens[b] + Snew keys (less leftpadK[b]).
   */
  kNew?: Tensor | null;
  vNew?: Tensor | null;
  /**
   * [R, rotaryDim / 2] each, in the query's dtype, rotaryDim even and <= D: rotary embedding of q and
   * kNew. kNew[b, i] and, with isCausal or a window, q[b, i] are rotated at position
   * cacheSeqlens[b] + i; without either, every q row of b at position cacheSeqlens[b] (as
   * FlashAttention). R must cover every position used.
   */
  rotaryCos?: Tensor | null;
  rotarySin?: Tensor | null;
  /** false (default): GPT-NeoX halves (x[i] with x[i + rotaryDim / 2]); true: GPT-J pairs (x[2i], x[2i + 1]). */
  rotaryInterleaved?: boolean;
  /** int32 [B]: the cache row each batch row uses (contiguous caches only); default b. No repeats while appending. */
  cacheBatchIdx?: Tensor | null;
  /** int32 [B]: row b's keys start at leftpadK[b] (those before are ignored); 0 <= leftpadK[b] <= cacheSeqlens[b]. */
  leftpadK?: Tensor | null;
  /** int32 [B, maxBlocksPerSeq]: paged caches, key position j of row b in block blockTable[b, floor(j / blockSize)]. */
  blockTable?: Tensor | null;
  isCausal?: boolean;
  scale?: number;
  enableGqa?: boolean;
  window?: readonly [number, number] | null;
  alibiSlopes?: Tensor | null;
  softcap?: number;
  backends?: readonly string[];
  /** As SdpaOptions.kernel. */
  kernel?: string;
}

export interface DropoutParams {
  readonly p: number;
  readonly seed: bigint;
  readonly offset: number;
  /** Drop an element when its Philox word is below this (uint32); see philox.ts. */
  readonly threshold: number;
  /** 1 / (1 - p), applied to kept elements. */
  readonly keepScale: number;
}

export interface MaskParams {
  readonly kind: 'bool' | 'additive';
  /** The user's tensor, as given: rank <= 4, broadcastable to [B, Hq, Sq, Sk]. */
  readonly tensor: Tensor;
  /** Strides of the mask expanded to [B, Hq, Sq, Sk]: 0 on broadcast dims. */
  readonly expandedStrides: readonly [number, number, number, number];
}

export interface SequsedKParams {
  /** The user's int32 [B] tensor (kernels read it on the device). */
  readonly tensor: Tensor;
  /**
   * Host copy of the validated lengths: 0 <= lengths[b] <= the key count of row b. Null when the
   * values stayed on the device (params.indexValuesOnDevice): they were not read, and kernels clamp
   * what they read on the device.
   */
  readonly lengths: Int32Array | null;
}

export interface PagedKvParams {
  /** The user's int32 [B, maxBlocksPerSeq] tensor (kernels read it on the device). */
  readonly blockTable: Tensor;
  /** Keys per block: dim 1 of key and value. */
  readonly blockSize: number;
  /** Blocks in the pool: dim 0 of key and value. */
  readonly numBlocks: number;
  readonly maxBlocksPerSeq: number;
  /**
   * Host copy of the table, row-major [B, maxBlocksPerSeq]. Every entry a sequence reads (its first
   * ceil(keys / blockSize)) is in [0, numBlocks); the others are unchecked and never read. Null when
   * the values stayed on the device (params.indexValuesOnDevice): entries unread, kernels clamp them.
   */
  readonly table: Int32Array | null;
}

/**
 * A sdpaKvCache call as backends see it. The caches are pools of blocks: a blockTable call's pools
 * as given (params.paged holds the table), and a contiguous cache [Bc, Sc, Hk, D] as a pool of Bc
 * blocks of Sc keys whose table is cacheBatchIdx (one block per row). params.key / params.value are
 * the user's cache tensors, params.query the user's q seen as [B, Hq, Sq, D] (a transposed view).
 *
 * A backend that takes it (no rule noKvCache) runs, in forward(params):
 * 1. append: for b < B, i < newLen: pos = cacheSeqlens[b] + i; write rotate(kNew[b, i], pos) and
 *    vNew[b, i] at key position pos of row b (cache row cacheRow(b), or block table[b, pos / blockSize],
 *    row pos % blockSize), rounded once to the cache's dtype;
 * 2. rotate q: row i of batch row b at qPosition(b, i) (rotary.qPerRow: cacheSeqlens[b] + i, else
 *    cacheSeqlens[b]), in the backend's precision;
 * 3. attention of row b over key positions [keyStart[b], keyStart[b] + keyCount[b]) of its row,
 *    lower-right aligned (query i's diagonal is key keyCount[b] - Sq + i), with causal, window,
 *    softcap, ALiBi and scale from the params; out [B, Hq, Sq, Dv] (the result transposes it to
 *    [B, Sq, Hq, Dv]), logsumexp [B, Hq, Sq].
 * A GPU backend can do 1 and 2 in one small kernel, then 3 as its paged decode.
 */
export interface KvCacheParams {
  /** The user's cache tensors, as params.key / params.value. */
  readonly kCache: Tensor;
  readonly vCache: Tensor;
  /** Key positions each row holds: Sc (contiguous), or maxBlocksPerSeq * blockSize (paged). */
  readonly capacity: number;
  /**
   * The user's int32 [B] tensor, or null (every row full); and the host copy of what it says.
   * Host copies (seqlens, cacheRows, keyStart, keyCount) are null when the call was validated during
   * graph capture (params.capturing): the index tensors were checked for shape, dtype and device only,
   * and kernels read them on the device, clamping each value (kvHostCopies says so for host backends).
   */
  readonly cacheSeqlens: Tensor | null;
  readonly seqlens: Int32Array | null;
  /** kNew / vNew [B, newLen, Hk, D | Dv], or null with newLen 0. */
  readonly kNew: Tensor | null;
  readonly vNew: Tensor | null;
  readonly newLen: number;
  readonly rotary: KvCacheRotary | null;
  /** Contiguous caches: the user's int32 [B] tensor (null: row b uses cache row b) and the host rows (null for paged caches, and while capturing). */
  readonly cacheBatchIdx: Tensor | null;
  readonly cacheRows: Int32Array | null;
  /** The user's int32 [B] leftpadK tensor, or null. */
  readonly leftpadK: Tensor | null;
  /** Host: the first key position row b attends to (leftpadK[b], or 0); null while capturing. */
  readonly keyStart: Int32Array | null;
  /** Host: how many keys row b attends to: seqlens[b] + newLen - keyStart[b]; null while capturing. */
  readonly keyCount: Int32Array | null;
}

export interface KvCacheRotary {
  /** [R, dim / 2] each, in the query's dtype. */
  readonly cos: Tensor;
  readonly sin: Tensor;
  readonly dim: number;
  readonly interleaved: boolean;
  /** true (causal or window): q row i of b at position seqlens[b] + i; false: every row at seqlens[b]. */
  readonly qPerRow: boolean;
}

export interface VarlenParams {
  readonly cuSeqlensQ: Tensor;
  readonly cuSeqlensK: Tensor;
  readonly maxSeqlenQ: number;
  readonly maxSeqlenK: number;
  /**
   * Host copies of the offsets (validated: start at 0, non-decreasing, end at total). Null when the
   * values stayed on the device (params.indexValuesOnDevice): only shape, dtype and device were
   * checked, and kernels clamp the offsets they read on the device.
   */
  readonly seqlensQ: Int32Array | null;
  readonly seqlensK: Int32Array | null;
}

/**
 * Normalized parameters of one call. Dense: query [B, Hq, Sq, D], key [B, Hk, Sk, D],
 * value [B, Hk, Sk, Dv]. Varlen: query [totalQ, Hq, D], key [totalK, Hk, D], value [totalK, Hk, Dv]
 * (paged: key [numBlocks, blockSize, Hk, D], value [numBlocks, blockSize, Hk, Dv]), and
 * batch/seqQ/seqK are the count and the max lengths. KV cache: query [B, Hq, Sq, D] (a view of the
 * user's [B, Sq, Hq, D]), key/value the caches (KvCacheParams), seqK the longest keyCount.
 */
export interface SdpaParams {
  readonly query: Tensor;
  readonly key: Tensor;
  readonly value: Tensor;
  readonly device: Device;
  /**
   * The output's dtype: the inputs' own, except for float8_e4m3 inputs (descale non-null), whose
   * output is bfloat16; query, key and value keep float8_e4m3 as their `.dtype`.
   */
  readonly dtype: FloatDType;
  /**
   * float8_e4m3 inputs' dequantization factors (SdpaOptions.descale, checked finite and > 0): the
   * call attends descale.q * query, descale.k * key and descale.v * value. Non-null exactly when the
   * inputs are float8_e4m3; such calls are dense, without requiresGrad, with a bool mask if any.
   */
  readonly descale: Readonly<Descale> | null;
  readonly batch: number;
  readonly headsQ: number;
  readonly headsKV: number;
  readonly seqQ: number;
  readonly seqK: number;
  readonly headDim: number;
  readonly headDimV: number;
  readonly scale: number;
  readonly causal: boolean;
  readonly alignment: Alignment;
  /** Unbounded sides are null. */
  readonly window: { readonly left: number | null; readonly right: number | null } | null;
  readonly mask: MaskParams | null;
  readonly alibiSlopes: Tensor | null;
  /** 0 = off. */
  readonly softcap: number;
  readonly dropout: DropoutParams | null;
  readonly enableGqa: boolean;
  readonly varlen: VarlenParams | null;
  /** Keys used per batch row; null = all of them. */
  readonly sequsedK: SequsedKParams | null;
  /**
   * Varlen and kv-cache calls: K/V in pages addressed through a block table; null = packed
   * [totalK, Hk, D] (varlen) or a contiguous cache (kv cache).
   */
  readonly paged: PagedKvParams | null;
  /** sdpaKvCache calls (see KvCacheParams); null for sdpa and sdpaVarlen. */
  readonly kvCache: KvCacheParams | null;
  readonly requiresGrad: boolean;
  readonly deterministic: boolean;
  /**
   * The kernel family the call asked for (SdpaOptions.kernel), validated: a name in the running
   * backend's `kernels`, whose check passed. null: the backend's dispatcher picks.
   */
  readonly kernel: string | null;
  /**
   * The call was validated while its device's current stream captured a graph (deviceCapturing).
   * Its index values then stay on the device (indexValuesOnDevice): a synchronizing read would break
   * the capture, and replays may change them.
   */
  readonly capturing: boolean;
  /**
   * The values of device-resident index tensors (cuSeqlensQ/K, sequsedK, blockTable; for kv-cache
   * calls also cacheSeqlens, cacheBatchIdx and leftpadK) were not read on the host: during graph
   * capture, or by the call's indexValuesOnDevice option. They were checked
   * for shape, dtype and device only, so their host copies are null. A backend that needs the values
   * on the host declines such calls (indexValuesOnHost); kernels that read them on the device clamp
   * them. Always false on the CPU, whose index values are host memory.
   */
  readonly indexValuesOnDevice: boolean;
  /**
   * The user's output tensor (SdpaOptions.out), validated: the output's shape, dtype (params.dtype)
   * and device, contiguous, sharing no memory with an input. A backend writes the attention output into
   * it (forwardOutput) and returns it as out; null: the backend allocates the output.
   */
  readonly out: Tensor | null;
}
