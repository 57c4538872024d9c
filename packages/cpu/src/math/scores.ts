// One query row's scores, in the order docs/ARCHITECTURE.md fixes: s = scale * q.k, then softcap, then ALiBi,
// then the mask (additive or bool), with causal and window limiting which keys are looked at at all.
// Forward and backward share this, so both see exactly the same scores.
import type { HostArray, MaskParams, SdpaParams } from '@attn/core';
import { gather } from './host-io.js';
import { dotRows } from './kernels.js';

export class ScoreRow {
  /** Keys [lo, hi) of the last visible() call; lo >= hi means the row sees no key. */
  lo = 0;
  hi = 0;
  /** tanh(x / softcap) of the last compute(), indexed by key; the softcap derivative needs it. */
  readonly tanh: Float64Array | null;

  private readonly scale: number;
  private readonly softcap: number;
  private readonly lowerRight: boolean;
  /** Largest j - (i + offset) that is visible, null when unbounded (no causal, no window right). */
  private readonly right: number | null;
  /** Largest (i + offset) - j that is visible, null when unbounded. */
  private readonly left: number | null;
  private readonly slopes: Float64Array | null;
  private readonly slopesPerBatch: boolean;
  private readonly headsQ: number;
  private readonly mask: MaskParams | null;
  private readonly maskData: HostArray | null;
  private readonly maskRow: Float64Array | null;

  constructor(params: SdpaParams, maxSeqK: number) {
    // float8_e4m3 inputs: (descale.q * q) . (descale.k * k) = descale.q * descale.k * (q . k).
    const d = params.descale;
    this.scale = d ? params.scale * d.q * d.k : params.scale;
    this.softcap = params.softcap;
    this.lowerRight = params.alignment === 'lowerRight';
    const w = params.window;
    let right = w?.right ?? null;
    if (params.causal) right = right === null ? 0 : Math.min(right, 0);
    this.right = right;
    this.left = w?.left ?? null;
    this.headsQ = params.headsQ;
    const slopes = params.alibiSlopes;
    this.slopes = slopes ? slopes.toFloat64Array() : null;
    this.slopesPerBatch = slopes !== null && slopes.rank === 2;
    this.tanh = params.softcap > 0 ? new Float64Array(maxSeqK) : null;
    this.mask = params.mask;
    this.maskData = params.mask ? params.mask.tensor.hostData() : null;
    this.maskRow = params.mask ? new Float64Array(maxSeqK) : null;
  }

  /** The key on query row i's diagonal: i + offset, offset = Sk - Sq when lower-right (causal, window and ALiBi measure from it). */
  diagonal(i: number, sq: number, sk: number): number {
    return this.lowerRight ? i + sk - sq : i;
  }

  /** Sets [lo, hi): the keys that causal and the window leave to query row i. */
  visible(i: number, sq: number, sk: number): void {
    const d = this.diagonal(i, sq, sk);
    this.lo = this.left === null ? 0 : Math.max(0, d - this.left);
    this.hi = this.right === null ? sk : Math.min(sk, d + this.right + 1);
  }

  /**
   * s[j] for j in [lo, hi) of query row i of head h, sequence b; q holds the row (D values), k the
   * sequence's keys for this head ([sk, D] row-major). Masked keys get -Infinity.
   */
  compute(
    q: Float64Array,
    k: Float64Array,
    D: number,
    b: number,
    h: number,
    i: number,
    sq: number,
    sk: number,
    s: Float64Array,
  ): void {
    const { lo, hi } = this;
    dotRows(q, k, D, lo, hi, this.scale, s);
    const cap = this.softcap;
    const tanh = this.tanh;
    if (tanh) {
      for (let j = lo; j < hi; j++) {
        const t = Math.tanh(s[j]! / cap);
        tanh[j] = t;
        s[j] = cap * t;
      }
    }
    if (this.slopes) {
      const slope = this.slopes[this.slopesPerBatch ? b * this.headsQ + h : h]!;
      const diag = this.diagonal(i, sq, sk);
      for (let j = lo; j < hi; j++) s[j] = s[j]! - slope * Math.abs(diag - j);
    }
    const { mask, maskData, maskRow: m } = this;
    if (mask && maskData && m) {
      const [sb, sh, si, sj] = mask.expandedStrides;
      const t = mask.tensor;
      gather(maskData, t.dtype, t.offset + b * sb + h * sh + i * si + lo * sj, 1, 0, hi - lo, sj, m);
      if (mask.kind === 'additive') {
        for (let j = lo; j < hi; j++) s[j] = s[j]! + m[j - lo]!;
      } else {
        for (let j = lo; j < hi; j++) if (m[j - lo] === 0) s[j] = -Infinity;
      }
    }
  }
}
