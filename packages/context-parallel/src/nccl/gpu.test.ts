// The ring over NCCL on 2 GPUs, and on 4 and 8 where the host has them (one child process per GPU,
// scripts/ring-rank.mjs), against the unsharded call: the ring's out, logsumexp, dq, dk, dv and the
// single-GPU call's are both judged against cpu-math in float64 by the conformance accuracy rule (the
// naive implementation and its gradient allowance), on fresh random inputs (seeds in the message).
// Causal zigzag and not, GQA, uneven shards, contiguous, fp32 on memeff-cuda. Then the abort paths:
// a rank whose local call fails mid-ring fails the job with its error at once (the other ranks are
// killed, not left waiting), and a rank that stalls makes its peers give up at their transfer
// deadline with ATTN_CP_TIMEOUT. Runs where 2 CUDA devices and the addon are; otherwise skipped with
// the reason (or failing with ATTN_REQUIRE_GPU=1).
import '@attn/cpu';
import '@attn/cuda';
import '@attn/flash-cuda';
import '@attn/cutlass-memeff';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type CaseSpec, describeWhereRunnable, judge, naiveAttention, REFERENCE } from '@attn/conformance';
import { getBackend, randn, sdpaBackward, sdpaForward, tensor } from '@attn/core';
import type { FloatDType, Tensor } from '@attn/core';
import { availability, deviceCount } from '@attn/cuda';
import { beforeAll, expect, it } from 'vitest';
import { type LayoutKind, shardLayout } from '../layout.js';
import { unshardTensor } from '../shard.js';
import { addonLoad } from './addon.js';

interface GpuCase {
  readonly name: string;
  readonly seq: number;
  readonly headsQ: number;
  readonly headsKV: number;
  readonly headDim: number;
  readonly causal: boolean;
  readonly layout: LayoutKind;
  readonly dtype: FloatDType;
  readonly seed: number;
}

const seed = () => Math.floor(Math.random() * 2 ** 31);
const ALL_CASES: GpuCase[] = [
  {
    name: 'zigzag-causal-gqa-S1001',
    seq: 1001,
    headsQ: 4,
    headsKV: 2,
    headDim: 128,
    causal: true,
    layout: 'zigzag',
    dtype: 'bfloat16',
    seed: seed(),
  },
  {
    name: 'zigzag-full-S1024',
    seq: 1024,
    headsQ: 4,
    headsKV: 4,
    headDim: 64,
    causal: false,
    layout: 'zigzag',
    dtype: 'bfloat16',
    seed: seed(),
  },
  {
    name: 'contiguous-causal-gqa-S777',
    seq: 777,
    headsQ: 2,
    headsKV: 1,
    headDim: 128,
    causal: true,
    layout: 'contiguous',
    dtype: 'float16',
    seed: seed(),
  },
  {
    name: 'zigzag-causal-fp32-S515',
    seq: 515,
    headsQ: 4,
    headsKV: 2,
    headDim: 72,
    causal: true,
    layout: 'zigzag',
    dtype: 'float32',
    seed: seed(),
  },
];

// float32 runs on memeff-cuda (flash-cuda is fp16/bf16): its case runs where that addon is built.
const memeff = getBackend('memeff-cuda')?.availability().ok === true;
const CASES = ALL_CASES.filter((c) => c.dtype !== 'float32' || memeff);
if (!memeff) console.log('ring over NCCL: the float32 case is left out (memeff-cuda is not available here)');

const devices = availability().ok ? deviceCount() : 0;
/** Every ring size this host can run; 2 stands for the skip message where it has fewer GPUs. */
const RING_SIZES = [2, 4, 8].filter((n, i) => i === 0 || n <= devices);

function reason(ranks: number): string | null {
  const a = availability();
  if (!a.ok) return `@attn/cuda: ${a.reason}`;
  if (devices < ranks) return `${devices} CUDA device(s); the ring check needs ${ranks}`;
  const load = addonLoad();
  return load.ok ? null : `the NCCL addon: ${load.reason}`;
}

interface Launcher {
  launchRing(size: number, job: unknown, options?: { timeoutMs?: number }): Promise<{ dir: string }>;
}
const launcher = async () => (await import('../../scripts/ring-launch.mjs' as string)) as Launcher;

for (const RANKS of RING_SIZES)
  describeWhereRunnable(
    `ring over NCCL on ${RANKS} GPUs equals the unsharded call (conformance rule)`,
    reason(RANKS),
    () => {
      let dir = '';
      beforeAll(async () => {
        dir = (await (await launcher()).launchRing(RANKS, { mode: 'check', cases: CASES }, { timeoutMs: 400_000 })).dir;
      }, 420_000);

      for (const c of CASES) {
        it(`${c.name} ${c.dtype} Hq=${c.headsQ} Hk=${c.headsKV} D=${c.headDim}`, () => {
          const layout = shardLayout(c.layout, c.seq, RANKS);
          const qShape = [1, c.headsQ, c.seq, c.headDim];
          const kShape = [1, c.headsKV, c.seq, c.headDim];
          const read = (what: string, heads: number, width: number | null): Tensor => {
            const shards = Array.from({ length: RANKS }, (_, r) =>
              layout.chunksOf(r).map((ch, i) => {
                const buf = readFileSync(join(dir, `${c.name}.${what}.r${r}.c${i}.bin`));
                const values = new Float64Array(buf.buffer, buf.byteOffset, buf.byteLength / 8);
                const shape = width === null ? [1, heads, ch.length] : [1, heads, ch.length, width];
                return tensor(values.slice(), shape, { dtype: 'float64' });
              }),
            );
            return unshardTensor(shards, layout);
          };
          const ring = {
            out: read('out', c.headsQ, c.headDim),
            lse: read('lse', c.headsQ, null),
            dq: read('dq', c.headsQ, c.headDim),
            dk: read('dk', c.headsKV, c.headDim),
            dv: read('dv', c.headsKV, c.headDim),
          };
          const inputs = [qShape, kShape, kShape, qShape].map((s, i) => randn(s, { seed: c.seed + i, dtype: c.dtype }));
          const [q, k, v, g] = inputs as [Tensor, Tensor, Tensor, Tensor];
          const opts = { isCausal: c.causal, enableGqa: c.headsQ !== c.headsKV };
          const f64 = inputs.map((t) => t.toDType('float64'));
          const ref = sdpaForward(f64[0]!, f64[1]!, f64[2]!, { ...opts, backends: [REFERENCE], requiresGrad: true });
          const refG = sdpaBackward(f64[3]!, ref);
          const dev = inputs.map((t) => t.to('cuda:0'));
          const one = sdpaForward(dev[0]!, dev[1]!, dev[2]!, { ...opts, requiresGrad: true });
          const oneG = sdpaBackward(dev[3]!, one);
          const spec: CaseSpec = {
            name: c.name,
            dtype: c.dtype,
            batch: 1,
            headsQ: c.headsQ,
            headsKV: c.headsKV,
            seqQ: c.seq,
            seqK: c.seq,
            headDim: c.headDim,
            headDimV: c.headDim,
            layout: 'bhsd',
            enableGqa: opts.enableGqa,
            causal: c.causal,
          };
          const values = {
            q: q.toFloat64Array(),
            k: k.toFloat64Array(),
            v: v.toFloat64Array(),
            gradOut: g.toFloat64Array(),
            mask: null,
            slopes: null,
            paged: null,
          };
          const naive = naiveAttention(spec, values, null, true);
          const allow = naive.allowance!;
          const verdicts = (who: string, r: Record<'out' | 'lse' | 'dq' | 'dk' | 'dv', Tensor>) => [
            judge(`${who} out`, c.dtype, r.out.toFloat64Array(), ref.out.toFloat64Array(), naive.out),
            judge(`${who} logsumexp`, c.dtype, r.lse.toFloat64Array(), ref.logsumexp.toFloat64Array(), naive.lse),
            judge(`${who} dq`, c.dtype, r.dq.toFloat64Array(), refG.dq.toFloat64Array(), naive.dq, {
              allowance: allow.dq,
            }),
            judge(`${who} dk`, c.dtype, r.dk.toFloat64Array(), refG.dk.toFloat64Array(), naive.dk, {
              allowance: allow.dk,
            }),
            judge(`${who} dv`, c.dtype, r.dv.toFloat64Array(), refG.dv.toFloat64Array(), naive.dv, {
              allowance: allow.dv,
            }),
          ];
          const ringV = verdicts('ring', ring);
          const oneV = verdicts(`1 GPU (${one.backend})`, { out: one.out, lse: one.logsumexp, ...oneG });
          console.log([...ringV, ...oneV].map((v) => `${c.name}: ${v.ok ? 'ok  ' : 'FAIL'} ${v.message}`).join('\n'));
          expect(
            ringV.filter((v) => !v.ok).map((v) => v.message),
            `seed ${c.seed}`,
          ).toEqual([]);
        }, 180_000);
      }
    },
  );

const ABORT_CASE = {
  name: 'abort',
  seq: 4096,
  headsQ: 4,
  headsKV: 4,
  headDim: 64,
  causal: true,
  layout: 'zigzag',
  dtype: 'bfloat16',
  seed: seed(),
};
const ABORT_RANKS = Math.min(4, Math.max(2, devices));

describeWhereRunnable(`the ring's abort paths on ${ABORT_RANKS} GPUs`, reason(ABORT_RANKS), () => {
  const failed = async (job: object, timeoutMs: number): Promise<{ message: string; ms: number }> => {
    const start = Date.now();
    const err = await (await launcher()).launchRing(ABORT_RANKS, { ...job, cases: [ABORT_CASE] }, { timeoutMs }).then(
      () => null,
      (e: unknown) => e as Error,
    );
    expect(err, 'the job must fail').not.toBeNull();
    return { message: err!.message, ms: Date.now() - start };
  };

  it('a rank whose local call fails mid-ring fails the job with its error, the others killed at once', async () => {
    const failRank = ABORT_RANKS - 1;
    const { message, ms } = await failed({ mode: 'fail', failRank }, 120_000);
    const parts = message.split('\n---\n');
    expect(parts[0]).toMatch(new RegExp(`^rank ${failRank} exited 1:`));
    expect(parts[0]).toContain('ATTN_UNKNOWN_BACKEND');
    // Ranks still waiting on the dead one were killed by the launcher, not by its 120 s timeout.
    for (const p of parts.slice(1)) expect(p).not.toContain('did not finish within');
    expect(ms).toBeLessThan(60_000);
    console.log(`fail mid-ring: the job failed after ${ms} ms; ${parts.length} rank(s) reported`);
  }, 150_000);

  it('a rank that stalls makes its peers give up at the transfer deadline with ATTN_CP_TIMEOUT', async () => {
    const transferTimeoutMs = 5_000;
    const { message, ms } = await failed({ mode: 'stall', stallRank: 1, transferTimeoutMs }, 120_000);
    const parts = message.split('\n---\n');
    expect(parts[0]).toMatch(/^rank \d exited 1:/);
    expect(parts[0]).toContain('ATTN_CP_TIMEOUT');
    expect(parts[0]).toContain(`within ${transferTimeoutMs} ms`);
    expect(ms).toBeGreaterThanOrEqual(transferTimeoutMs);
    expect(ms).toBeLessThan(60_000);
    console.log(`stall: the job failed after ${ms} ms (deadline ${transferTimeoutMs} ms)`);
  }, 150_000);
});
