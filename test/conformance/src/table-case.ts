// The case tables' shorthand (describeCaseTable): a case as a few overrides of one default shape,
// turned into a CaseSpec.
import type { Alignment, FloatDType } from '@attn/core';
import type { CaseSpec, MaskSpec } from './cases.js';
import type { TableCase } from './describe-table.js';

export interface Short {
  dtype?: FloatDType;
  B?: number;
  Hq?: number;
  Hk?: number;
  Sq?: number;
  Sk?: number;
  D?: number;
  /** Value head dim; default D. */
  Dv?: number;
  layout?: CaseSpec['layout'];
  misalign?: CaseSpec['misalign'];
  causal?: boolean;
  alignment?: Alignment;
  window?: [number, number];
  softcap?: number;
  scale?: number;
  dropoutP?: number;
  deterministic?: boolean;
  alibi?: CaseSpec['alibi'];
  /** Packed sequences: per-sequence query and key lengths. */
  varlen?: { q: number[]; k: number[] };
  /** Keys used per batch row or sequence (sequsedK). */
  used?: number[];
  mask?: MaskSpec;
}

/** Defaults: bf16, B 2, 3 heads, 131 x 131, D 64, dense [B, H, S, D]. */
export function tableCase(name: string, c: Short, extra: Partial<TableCase> = {}): TableCase {
  const Hq = c.Hq ?? 3;
  const Hk = c.Hk ?? Hq;
  const D = c.D ?? 64;
  const varlen = c.varlen ? { seqlensQ: c.varlen.q, seqlensK: c.varlen.k } : undefined;
  return {
    name,
    dtype: c.dtype ?? 'bfloat16',
    batch: c.varlen ? c.varlen.q.length : (c.B ?? 2),
    headsQ: Hq,
    headsKV: Hk,
    seqQ: c.varlen ? Math.max(...c.varlen.q) : (c.Sq ?? 131),
    seqK: c.varlen ? Math.max(...c.varlen.k) : (c.Sk ?? 131),
    headDim: D,
    headDimV: c.Dv ?? D,
    layout: c.layout ?? 'bhsd',
    enableGqa: Hq !== Hk,
    ...(c.misalign ? { misalign: c.misalign } : {}),
    ...(c.causal ? { causal: true } : {}),
    ...(c.alignment ? { alignment: c.alignment } : {}),
    ...(c.window ? { window: c.window } : {}),
    ...(c.softcap ? { softcap: c.softcap } : {}),
    ...(c.scale !== undefined ? { scale: c.scale } : {}),
    ...(c.dropoutP ? { dropoutP: c.dropoutP } : {}),
    ...(c.deterministic ? { deterministic: true } : {}),
    ...(c.alibi ? { alibi: c.alibi } : {}),
    ...(varlen ? { varlen } : {}),
    ...(c.used ? { sequsedK: c.used } : {}),
    ...(c.mask ? { mask: c.mask } : {}),
    ...extra,
  };
}

/** Every dtype and head dim bucket 32..256, plain and causal (131 x 197 and 197 x 197). */
export function headDimGrid(extra: Partial<TableCase> = {}): TableCase[] {
  const out: TableCase[] = [];
  for (const dtype of ['bfloat16', 'float16'] as const)
    for (const D of [32, 64, 96, 128, 160, 192, 224, 256]) {
      out.push(tableCase(`${dtype} D${D}`, { dtype, D, Sq: 131, Sk: 197 }, extra));
      out.push(tableCase(`${dtype} D${D} causal`, { dtype, D, Sq: 197, Sk: 197, causal: true }, extra));
    }
  return out;
}
