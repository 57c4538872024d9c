// The window encoding against a model of how AOTriton's kernel reads it (parse_window and the
// top-left interval test of masked_load_store.py), checked element by element against attn's
// semantics on random shapes.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeWindow, WINDOW_BOTTOM_RIGHT_ALIGNED, WINDOW_TOP_LEFT_ALIGNED, type AotritonWindow } from './window.js';

type Align = 'upperLeft' | 'lowerRight';
interface Case {
  causal: boolean;
  window: { left: number | null; right: number | null } | null;
  alignment: Align;
}

/** attn: query i sees key j. */
function attnVisible(c: Case, sq: number, sk: number, i: number, j: number): boolean {
  const d = c.alignment === 'lowerRight' ? sk - sq : 0;
  if (c.causal && j > i + d) return false;
  if (c.window?.left != null && j < i + d - c.window.left) return false;
  if (c.window?.right != null && j > i + d + c.window.right) return false;
  return true;
}

/** AOTriton's kernel, per sequence of lengths (sq, sk). `buggy`: 0.10-0.11.1 forward (right := left). */
function aotVisible(w: AotritonWindow, sq: number, sk: number, i: number, j: number, buggy = false): boolean {
  if (w.causalType === 0) return true;
  const parseLeft = (v: number) => (v === WINDOW_TOP_LEFT_ALIGNED || v === WINDOW_BOTTOM_RIGHT_ALIGNED ? sq : v);
  const parseRight = (v: number) =>
    v === WINDOW_TOP_LEFT_ALIGNED ? 0 : v === WINDOW_BOTTOM_RIGHT_ALIGNED ? sk - sq : v;
  const left = parseLeft(w.windowLeft);
  const right = parseRight(buggy ? w.windowLeft : w.windowRight);
  return i - left <= j && j <= i + right;
}

function sameMask(w: AotritonWindow, c: Case, sq: number, sk: number, buggy = false): boolean {
  for (let i = 0; i < sq; i++) {
    for (let j = 0; j < sk; j++) if (aotVisible(w, sq, sk, i, j, buggy) !== attnVisible(c, sq, sk, i, j)) return false;
  }
  return true;
}

const side = fc.option(fc.integer({ min: 0, max: 12 }), { nil: null });
const caseArb: fc.Arbitrary<Case> = fc.record({
  causal: fc.boolean(),
  window: fc.option(fc.record({ left: side, right: side }), { nil: null }),
  alignment: fc.constantFrom<Align>('upperLeft', 'lowerRight'),
});
const len = fc.integer({ min: 1, max: 14 });

describe('encodeWindow', () => {
  it('no causal and no window is causal_type None', () => {
    expect(
      encodeWindow({ causal: false, window: null, alignment: 'upperLeft', seqQ: 4, seqK: 4, varlen: null }),
    ).toEqual({
      ok: true,
      window: { causalType: 0, windowLeft: 0, windowRight: 0 },
    });
  });

  it('causal is the same sentinel on both sides, as PyTorch passes it', () => {
    const ul = encodeWindow({ causal: true, window: null, alignment: 'upperLeft', seqQ: 4, seqK: 9, varlen: null });
    const lr = encodeWindow({ causal: true, window: null, alignment: 'lowerRight', seqQ: 4, seqK: 9, varlen: null });
    expect(ul).toEqual({
      ok: true,
      window: { causalType: 3, windowLeft: WINDOW_TOP_LEFT_ALIGNED, windowRight: WINDOW_TOP_LEFT_ALIGNED },
    });
    expect(lr).toEqual({
      ok: true,
      window: { causalType: 3, windowLeft: WINDOW_BOTTOM_RIGHT_ALIGNED, windowRight: WINDOW_BOTTOM_RIGHT_ALIGNED },
    });
  });

  it('dense: every causal/window/alignment matches attn element by element', () => {
    fc.assert(
      fc.property(caseArb, len, len, (c, sq, sk) => {
        const enc = encodeWindow({ ...c, seqQ: sq, seqK: sk, varlen: null });
        return enc.ok && sameMask(enc.window, c, sq, sk);
      }),
      { numRuns: 400 },
    );
  });

  it('varlen: encodable cases match attn in every sequence; the rest are refused with a reason', () => {
    fc.assert(
      fc.property(caseArb, fc.array(fc.tuple(len, len), { minLength: 1, maxLength: 4 }), (c, seqs) => {
        const maxQ = Math.max(...seqs.map((s) => s[0]));
        const maxK = Math.max(...seqs.map((s) => s[1]));
        const enc = encodeWindow({ ...c, seqQ: maxQ, seqK: maxK, varlen: {} });
        if (!enc.ok) {
          // Only lowerRight windows with a finite left or a right other than 0 are refused.
          return c.alignment === 'lowerRight' && /cannot be expressed/.test(enc.reason);
        }
        return seqs.every(([sq, sk]) => sameMask(enc.window, c, sq, sk));
      }),
      { numRuns: 400 },
    );
  });

  it('varlen lowerRight causal (sentinels) is encodable', () => {
    const enc = encodeWindow({ causal: true, window: null, alignment: 'lowerRight', seqQ: 8, seqK: 8, varlen: {} });
    expect(enc.ok).toBe(true);
  });

  it('the window_right bug: harmless exactly when both encoded sides are equal', () => {
    fc.assert(
      fc.property(caseArb, len, len, (c, sq, sk) => {
        const enc = encodeWindow({ ...c, seqQ: sq, seqK: sk, varlen: null });
        if (!enc.ok) return false;
        const w = enc.window;
        if (w.causalType === 0 || w.windowLeft === w.windowRight) return sameMask(w, c, sq, sk, true);
        return true;
      }),
      { numRuns: 300 },
    );
    // And an asymmetric window really is computed wrongly by the buggy forward.
    const c: Case = { causal: false, window: { left: 1, right: 3 }, alignment: 'upperLeft' };
    const enc = encodeWindow({ ...c, seqQ: 6, seqK: 6, varlen: null });
    expect(enc.ok && sameMask(enc.window, c, 6, 6, true)).toBe(false);
  });
});
