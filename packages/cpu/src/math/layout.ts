// Where the rows of one (sequence, head) live in a tensor, for both layouts the backend receives:
// dense [B, H, S, D] (any strides) and varlen packed [total, H, D] with cumulative offsets.
import { hostIndexCopies, type SdpaParams, type Tensor } from '@attn/core';

/** Row r of head h of sequence b starts at base(b, h) + r * rowStride; column c adds c * colStride. */
export interface RowAddressing {
  base(b: number, h: number): number;
  readonly rowStride: number;
  readonly colStride: number;
}

/**
 * The sequences of a call: how many, and the query and key length of each. With sequsedK the key
 * length of sequence b is sequsedK[b]: its keys stay where they are (startK), only the first that
 * many are read, so a call behaves exactly as one on the truncated key and value.
 */
export interface Sequences {
  readonly count: number;
  seqQ(b: number): number;
  seqK(b: number): number;
  /** First packed row of sequence b (0 for dense, where each sequence has its own batch index). */
  startQ(b: number): number;
  startK(b: number): number;
}

export function sequencesOf(params: SdpaParams): Sequences {
  const v = params.varlen;
  const { seqlensQ, seqlensK, sequsedK: used } = hostIndexCopies(params);
  if (!v) {
    return {
      count: params.batch,
      seqQ: () => params.seqQ,
      seqK: used ? (b) => used[b]! : () => params.seqK,
      startQ: () => 0,
      startK: () => 0,
    };
  }
  const cuQ = seqlensQ!;
  const cuK = seqlensK!;
  return {
    count: cuQ.length - 1,
    seqQ: (b) => cuQ[b + 1]! - cuQ[b]!,
    seqK: used ? (b) => used[b]! : (b) => cuK[b + 1]! - cuK[b]!,
    startQ: (b) => cuQ[b]!,
    startK: (b) => cuK[b]!,
  };
}

/**
 * Addressing of a dense [B, H, S, D] tensor or a packed [total, H, D] one whose sequence b starts at
 * packed row start(b).
 */
export function rowsOf(t: Tensor, start: ((b: number) => number) | null): RowAddressing {
  const s = t.strides;
  const offset = t.offset;
  if (start === null) {
    if (t.rank !== 4) throw new RangeError(`cpu-math: expected a rank-4 [B, H, S, D] tensor, got shape [${t.shape.join(', ')}]`);
    const [sb, sh, ss, sd] = s as [number, number, number, number];
    return { base: (b, h) => offset + b * sb + h * sh, rowStride: ss, colStride: sd };
  }
  if (t.rank !== 3) throw new RangeError(`cpu-math: expected a packed rank-3 [total, H, D] tensor, got shape [${t.shape.join(', ')}]`);
  const [st, sh, sd] = s as [number, number, number];
  return { base: (b, h) => offset + start(b) * st + h * sh, rowStride: st, colStride: sd };
}
