// cpu-flash runs the suite every backend runs, against cpu-math; then the bf16 backward on bf16 pairs
// (backward_bf16_pairs.h) on each level that has one, forced by name: the same harness and accuracy rule.
import { describeCaseTable, describeConformance, tableCase } from '@attn/conformance';
import type { TableCase } from '@attn/conformance';
import { describe, it } from 'vitest';
import '../index.js';
import { createCpuFlashBackend } from './backend.js';
import { addon } from './native.js';

describeConformance('cpu-flash', { quick: true });

// Fresh random inputs (a new base seed per run) at odd sizes, GQA, causal, and every feature the bf16
// backward takes (all of them: it shares backward.h's per-element code and schedules).
const BF16_BACKWARD: TableCase[] = [
  tableCase('S1 D8 gqa', { Sq: 1, Sk: 1, D: 8, Hq: 4, Hk: 2 }),
  tableCase('S17 D72 gqa causal', { Sq: 17, Sk: 17, D: 72, Hq: 6, Hk: 2, causal: true }),
  tableCase('S1000 D64', { B: 1, Hq: 2, Sq: 1000, Sk: 1000, D: 64 }),
  tableCase('S1000 D128 gqa causal', { B: 1, Hq: 2, Hk: 1, Sq: 1000, Sk: 1000, D: 128, causal: true }),
  tableCase('S17x1000 D256 gqa', { B: 1, Hq: 2, Hk: 1, Sq: 17, Sk: 1000, D: 256 }),
  tableCase('S1000x17 D128 causal lower-right', {
    B: 1,
    Sq: 1000,
    Sk: 17,
    D: 128,
    causal: true,
    alignment: 'lowerRight',
  }),
  tableCase('D128 Dv72', { D: 128, Dv: 72, Hq: 4, Hk: 2 }),
  tableCase('D64 bshd', { D: 64, layout: 'bshd', causal: true }),
  tableCase('window', { D: 64, window: [20, 5] }),
  tableCase('alibi + softcap', { D: 64, alibi: 'perHead', softcap: 5 }),
  tableCase('dropout gqa causal', { D: 64, Hq: 4, Hk: 2, dropoutP: 0.2, causal: true }),
  tableCase('bool mask, fully masked rows', {
    D: 72,
    mask: { kind: 'bool', shape: [131, 131], fullyMaskedRows: true },
  }),
  tableCase('additive mask [B, Hq, Sq, Sk] (dbias)', { D: 64, mask: { kind: 'additive', shape: [2, 3, 131, 131] } }),
  tableCase('additive mask [1, Hq, 1, Sk] (dbias reduced)', {
    D: 64,
    mask: { kind: 'additive', shape: [1, 3, 1, 131] },
  }),
  tableCase('varlen causal', { D: 64, Hq: 4, Hk: 2, varlen: { q: [37, 1, 130], k: [70, 9, 140] }, causal: true }),
  tableCase('sequsedK', { D: 64, Sq: 70, Sk: 200, used: [150, 3] }),
];

const load = addon();
const runnable = load.ok ? load.addon.buildInfo().runnableIsas : [];
for (const isa of ['avx512bf16', 'amx'] as const) {
  const title = `cpu-flash bf16 backward on bf16 pairs, level ${isa}`;
  if (!runnable.includes(isa)) {
    const reason = load.ok ? `this CPU does not run ${isa} (runnable: ${runnable.join(', ')})` : load.reason;
    console.log(`${title} skipped: ${reason}`);
    describe.skip(`${title} (skipped: ${reason})`, () => {
      it('needs the level', () => {});
    });
    continue;
  }
  const flash = createCpuFlashBackend({ isa, threads: 2 });
  const launch = { forward: flash.forward, backward: flash.backward! };
  describe(title, () => {
    describeCaseTable(
      'cpu-flash',
      BF16_BACKWARD.map((c) => ({ ...c, launch })),
    );
  });
}
