// The window a kernel is handed. A side of Sq + Sk keys or more reaches past every key from every
// query, whatever the alignment, so it is the same as unbounded (-1): a window of 2**40 runs instead
// of overflowing a kernel's 32-bit counters. Under varlen, seqQ and seqK are the longest sequences.
import type { SdpaParams } from './params.js';

export function kernelWindow(p: Pick<SdpaParams, 'seqQ' | 'seqK' | 'window'>): { left: number; right: number } {
  const reach = p.seqQ + p.seqK;
  const side = (w: number | null | undefined) => (w === null || w === undefined || w >= reach ? -1 : w);
  return { left: side(p.window?.left), right: side(p.window?.right) };
}
