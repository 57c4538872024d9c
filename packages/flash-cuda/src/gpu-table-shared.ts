// The cases flash-cuda's forward and backward tables share (gpu-table-forward.test.ts,
// gpu-table-backward.test.ts): odd head dims and lengths, every feature in both alignments,
// strided and misaligned inputs, varlen. Test support only.
import type { Short } from '@attn/conformance';

export function sharedCases(add: (name: string, c: Short) => void): void {
  for (const D of [1, 8, 40, 72, 100, 250]) add(`bf16 odd D${D}`, { D, Sq: 70, Sk: 90 });
  add('s1', { B: 1, Hq: 1, Sq: 1, Sk: 1 });
  add('sq1 sk17', { Sq: 1, Sk: 17 });
  add('sq17 sk1', { Sq: 17, Sk: 1 });
  add('long keys sq64 sk3000', { Sq: 64, Sk: 3000, B: 1, Hq: 2 });
  for (const alignment of ['upperLeft', 'lowerRight'] as const) {
    add(`causal ${alignment} sq37 sk300`, { Sq: 37, Sk: 300, causal: true, alignment });
    add(`causal ${alignment} sq300 sk37 (rows without keys)`, { Sq: 300, Sk: 37, causal: true, alignment });
    add(`window[16,0] ${alignment} sq150 sk260`, { Sq: 150, Sk: 260, window: [16, 0], alignment });
    add(`window[40,9] ${alignment}`, { Sq: 200, Sk: 170, window: [40, 9], alignment });
    add(`window[-1,5] ${alignment}`, { Sq: 120, Sk: 300, window: [-1, 5], alignment });
    add(`alibi[H] causal ${alignment}`, { Sq: 100, Sk: 150, alibi: 'perHead', causal: true, alignment });
  }
  add('alibi[B,H]', { Sq: 90, Sk: 140, alibi: 'perBatchHead' });
  add('softcap 5', { Sq: 100, Sk: 170, softcap: 5, scale: 0.5 });
  add('softcap 30 causal alibi', { Sq: 150, Sk: 150, alibi: 'perHead', softcap: 30, causal: true });
  add('negative scale', { scale: -0.2 });
  add('gqa 8/2', { Hq: 8, Hk: 2 });
  add('dropout 0.17', { Sq: 130, Sk: 150, dropoutP: 0.17 });
  add('dropout 0.5 causal gqa fp16', { dtype: 'float16', Hq: 4, Hk: 2, Sq: 97, Sk: 97, dropoutP: 0.5, causal: true });
  add('strided bshd', { layout: 'bshd', Hq: 4, Sq: 77, Sk: 99 });
  add('strided bshd D72 gqa causal', { layout: 'bshd', D: 72, Hq: 4, Hk: 2, Sq: 77, Sk: 99, causal: true });
  add('misaligned base (element-wise path)', { misalign: 'base', Sq: 60, Sk: 80 });
  add('varlen', { varlen: { q: [5, 17, 1, 64], k: [9, 17, 30, 130] } });
  add('varlen causal lowerRight gqa', {
    Hq: 4,
    Hk: 2,
    varlen: { q: [5, 130, 1], k: [9, 120, 300] },
    causal: true,
    alignment: 'lowerRight',
  });
  add('varlen window dropout', { varlen: { q: [70, 3], k: [90, 200] }, window: [20, 3], dropoutP: 0.3 });
}
