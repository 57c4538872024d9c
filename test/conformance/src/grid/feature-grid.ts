// The feature grid: every combination of the features a call can have (layout, mask kind, causal,
// alignment, window, ALiBi, softcap, dropout, GQA, sequsedK) on shapes that fused kernels decline (zero
// lengths, Dv = 0, head dims up to 512) as well as an ordinary one, in every dtype. A device whose
// backends are all imported must run each of them (its fallback included): the grid walk checks
// that selection never ends in NoBackendError and that what runs matches cpu-math.
import { FLOAT_DTYPES, type Alignment, type FloatDType } from '@attn/core';
import type { CaseSpec, MaskSpec } from '../cases.js';

export interface GridShape {
  readonly batch: number;
  readonly headsKV: number;
  readonly seqQ: number;
  readonly seqK: number;
  readonly headDim: number;
  readonly headDimV: number;
}

/** The shapes of the grid, by name: an ordinary one first, then the sizes fused kernels decline. */
export const GRID_SHAPES: Readonly<Record<string, GridShape>> = {
  base: { batch: 2, headsKV: 2, seqQ: 7, seqK: 9, headDim: 8, headDimV: 8 },
  'd72-dv24-s1': { batch: 1, headsKV: 1, seqQ: 1, seqK: 1, headDim: 72, headDimV: 24 },
  d512: { batch: 1, headsKV: 1, seqQ: 3, seqK: 5, headDim: 512, headDimV: 512 },
  sq0: { batch: 2, headsKV: 1, seqQ: 0, seqK: 5, headDim: 8, headDimV: 8 },
  sk0: { batch: 2, headsKV: 1, seqQ: 5, seqK: 0, headDim: 8, headDimV: 8 },
  b0: { batch: 0, headsKV: 1, seqQ: 5, seqK: 5, headDim: 8, headDimV: 8 },
  dv0: { batch: 2, headsKV: 1, seqQ: 5, seqK: 6, headDim: 8, headDimV: 0 },
};

type Layout = 'bhsd' | 'bshd' | 'varlen';

/** One combination of features (the axes of the grid). */
export interface GridFeatures {
  readonly layout: Layout;
  /** Dense layouts only (varlen takes no mask). */
  readonly mask: MaskSpec['kind'] | null;
  readonly causal: boolean;
  readonly alignment: Alignment;
  readonly window: boolean;
  readonly alibi: boolean;
  readonly softcap: boolean;
  readonly dropout: boolean;
  /** Query heads per key/value head: 1 (MHA) or 2 (GQA). */
  readonly group: 1 | 2;
  /** Keys used per row: all but two in the first rows, none in the last (usedKeys). */
  readonly sequsedK: boolean;
}

/**
 * Every combination of the feature axes: 7 layout/mask pairs x 15 causal/window/ALiBi/alignment
 * settings (the alignment only where one of the three anchors on the diagonal) x 2^4 = 1680.
 */
export function featureCombinations(): GridFeatures[] {
  const pairs: [Layout, GridFeatures['mask']][] = [];
  for (const layout of ['bhsd', 'bshd'] as const)
    for (const mask of [null, 'bool', 'additive'] as const) pairs.push([layout, mask]);
  pairs.push(['varlen', null]);
  const out: GridFeatures[] = [];
  for (const [layout, mask] of pairs)
    for (const causal of [false, true])
      for (const alignment of ['upperLeft', 'lowerRight'] as const)
        for (const window of [false, true])
          for (const alibi of [false, true]) {
            if (alignment === 'lowerRight' && !(causal || window || alibi)) continue;
            for (const softcap of [false, true])
              for (const dropout of [false, true])
                for (const group of [1, 2] as const)
                  for (const sequsedK of [false, true])
                    out.push({ layout, mask, causal, alignment, window, alibi, softcap, dropout, group, sequsedK });
          }
  return out;
}

/** Per-sequence lengths of a varlen case: sequence b is shorter by 2b queries and 3b keys (never below 0). */
function varlenLengths(shape: GridShape): { seqlensQ: number[]; seqlensK: number[] } {
  const seqlensQ = Array.from({ length: shape.batch }, (_, b) => Math.max(0, shape.seqQ - 2 * b));
  const seqlensK = Array.from({ length: shape.batch }, (_, b) => Math.max(0, shape.seqK - 3 * b));
  return { seqlensQ, seqlensK };
}

/** sequsedK of a case: all keys but two in each row but the last, which uses none. */
function usedKeys(seqlensK: readonly number[]): number[] {
  return seqlensK.map((sk, b) => (b === seqlensK.length - 1 ? 0 : Math.max(0, sk - 2)));
}

export function gridName(shape: string, dtype: FloatDType, f: GridFeatures): string {
  const parts = [shape, dtype, f.layout];
  if (f.mask) parts.push(`${f.mask}-mask`);
  if (f.causal) parts.push('causal');
  if ((f.causal || f.window || f.alibi) && f.alignment === 'lowerRight') parts.push('lower-right');
  if (f.window) parts.push('window');
  if (f.alibi) parts.push('alibi');
  if (f.softcap) parts.push('softcap');
  if (f.dropout) parts.push('dropout');
  if (f.group > 1) parts.push('gqa');
  if (f.sequsedK) parts.push('sequsedK');
  return parts.join(' ');
}

/** The conformance case of one grid point. */
export function gridCase(shapeName: string, dtype: FloatDType, f: GridFeatures): CaseSpec {
  const shape = GRID_SHAPES[shapeName];
  if (!shape) throw new Error(`no grid shape '${shapeName}'`);
  const headsQ = shape.headsKV * f.group;
  const varlen = f.layout === 'varlen' ? varlenLengths(shape) : undefined;
  const keysPerRow = varlen ? varlen.seqlensK : Array<number>(shape.batch).fill(shape.seqK);
  const mask: MaskSpec | undefined =
    f.mask === 'bool'
      ? { kind: 'bool', shape: [shape.seqQ, shape.seqK], fullyMaskedRows: true }
      : f.mask === 'additive'
        ? { kind: 'additive', shape: [shape.batch, headsQ, shape.seqQ, shape.seqK] }
        : undefined;
  return {
    name: gridName(shapeName, dtype, f),
    dtype,
    batch: shape.batch,
    headsQ,
    headsKV: shape.headsKV,
    seqQ: shape.seqQ,
    seqK: shape.seqK,
    headDim: shape.headDim,
    headDimV: shape.headDimV,
    layout: f.layout === 'bshd' ? 'bshd' : 'bhsd',
    enableGqa: f.group > 1,
    ...(mask ? { mask } : {}),
    causal: f.causal,
    alignment: f.alignment,
    ...(f.window ? { window: [3, 1] as const } : {}),
    ...(f.alibi ? { alibi: 'perHead' as const } : {}),
    softcap: f.softcap ? 2.5 : 0,
    dropoutP: f.dropout ? 0.3 : 0,
    ...(varlen ? { varlen } : {}),
    ...(f.sequsedK ? { sequsedK: usedKeys(keysPerRow) } : {}),
  };
}

/** Every grid point: shape x dtype x feature combination. */
export function gridCases(dtypes: readonly FloatDType[] = FLOAT_DTYPES): CaseSpec[] {
  const combos = featureCombinations();
  return Object.keys(GRID_SHAPES).flatMap((shape) =>
    dtypes.flatMap((dtype) => combos.map((f) => gridCase(shape, dtype, f))),
  );
}
