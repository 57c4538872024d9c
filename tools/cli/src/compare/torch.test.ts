import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { PLAIN_FEATURES, type ProblemSpec } from '../problem.js';
import { ratioTo } from '../bench/ratios.js';
import { runTorch, torchDType, torchIncompatibility, torchRequest, torchRows, torchScriptPath } from './torch.js';

const problem: ProblemSpec = {
  ...PLAIN_FEATURES,
  causal: true,
  batch: 2,
  headsQ: 4,
  headsKV: 2,
  seqQ: 64,
  seqK: 64,
  headDim: 32,
  headDimV: 32,
  dtype: 'float32',
  device: 'cpu',
  seed: 0,
};
const sink = { write: () => true };
const timing = { warmup: 1, warmupMs: 0, repeat: 3, budgetMs: 1000 };

const python = spawnSync('python3', ['-c', 'import sys; print(sys.version_info[0])'], { encoding: 'utf8' });
const hasPython = python.status === 0 && python.stdout.trim() === '3';
const hasTorch = hasPython && spawnSync('python3', ['-c', 'import torch'], { encoding: 'utf8' }).status === 0;
if (!hasPython)
  console.warn('compare/torch.test: python3 is missing; the tests that run the shipped script are skipped');

/** A stand-in for the script: prints a canned answer (tests the protocol, not torch). */
function cannedScript(answer: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'attn-torch-'));
  const path = join(dir, 'answer.py');
  writeFileSync(
    path,
    `import sys, json\njson.load(sys.stdin)\nprint(sys.stdin.read(), end='')\nsys.stdout.write(${JSON.stringify(answer)})\n`,
  );
  return path;
}

describe('--compare torch', () => {
  it('asks for the CPU backends with our thread count', () => {
    const r = torchRequest([problem], ['fwd', 'bwd'], timing, 3, null);
    expect(r).toMatchObject({
      device: 'cpu',
      threads: 3,
      dtype: 'float32',
      modes: ['fwd', 'bwd'],
      backends: ['math', 'flash'],
    });
    expect(r.cases[0]).toMatchObject({
      id: 0,
      headsQ: 4,
      headsKV: 2,
      causal: true,
      alignment: 'upperLeft',
      mask: null,
    });
    expect(torchRequest([{ ...problem, mask: 'additive' }], ['fwd'], timing, 3, null).cases[0]).toMatchObject({
      mask: 'additive',
    });
    expect(torchRequest([{ ...problem, device: 'cuda:1' }], ['fwd'], timing, 3, null)).toMatchObject({
      device: 'cuda',
      deviceIndex: 1,
      backends: ['flash', 'efficient', 'cudnn', 'math'],
    });
  });

  it('runs a float8_e4m3 problem as torch bfloat16 (torch has no fp8 attention), and ratios compare ours with it', () => {
    const fp8: ProblemSpec = { ...problem, dtype: 'float8_e4m3', device: 'cuda' };
    expect(torchRequest([fp8], ['fwd'], timing, 1, null).dtype).toBe('bfloat16');
    const rows = torchRows([fp8], {
      available: true,
      torch: '2.x',
      device: 'cuda',
      threads: 1,
      timer: 'torch.cuda.Event',
      results: [{ case: 0, mode: 'fwd', backend: 'cudnn', ok: true, medianMs: 3, p20Ms: 3, p80Ms: 3, samples: 3 }],
    });
    expect(rows[0]).toMatchObject({ backend: 'torch-cudnn', dtype: 'bfloat16' });
    const ours = { ...rows[0]!, source: 'attn' as const, backend: 'flash-cuda', dtype: 'float8_e4m3', medianMs: 2 };
    expect(ratioTo(ours, 'torch-cudnn', [...rows, ours])).toBeCloseTo(1.5);
    expect(torchDType('float16')).toBe('float16');
  });

  it('does not compare features torch lacks', () => {
    expect(torchIncompatibility(problem)).toBeNull();
    expect(torchIncompatibility({ ...problem, window: [8, 0], softcap: 30 })).toMatch(/a window, softcap/);
    expect(torchIncompatibility({ ...problem, window: [8, 0], mask: 'bool' })).toMatch(/with a window$/);
  });

  it('compares random masks, with causal too, except beside lower-right causal when Sq != Sk', () => {
    for (const mask of ['bool', 'additive'] as const) {
      expect(torchIncompatibility({ ...problem, mask })).toBeNull();
      expect(torchIncompatibility({ ...problem, mask, alignment: 'lowerRight' })).toBeNull(); // Sq = Sk: plain is_causal
      expect(torchIncompatibility({ ...problem, mask, causal: false, alignment: 'lowerRight', seqQ: 16 })).toBeNull();
      expect(torchIncompatibility({ ...problem, mask, alignment: 'lowerRight', seqQ: 16 })).toMatch(
        /mask and lower-right causal/,
      );
    }
  });

  it('reports a missing python instead of failing', async () => {
    const a = await runTorch(torchRequest([problem], ['fwd'], timing, 1, null), 'python3-that-does-not-exist', sink);
    expect(a).toEqual({ available: false, reason: expect.stringMatching(/not found on PATH.*--python/) });
  });

  it.skipIf(!hasPython)('reads answers and turns them into rows named torch-<backend>', async () => {
    const answer = {
      available: true,
      torch: '2.9.0',
      device: 'cpu',
      threads: 2,
      timer: 'time.perf_counter',
      results: [
        { case: 0, mode: 'fwd', backend: 'math', ok: true, medianMs: 2, p20Ms: 1.5, p80Ms: 2.5, samples: 3 },
        { case: 0, mode: 'fwd', backend: 'flash', ok: false, reason: 'No available kernel' },
      ],
    };
    const got = await runTorch(
      torchRequest([problem], ['fwd'], timing, 2, null),
      'python3',
      sink,
      cannedScript(JSON.stringify(answer)),
    );
    expect(got).toEqual(answer);
    const rows = torchRows([problem], got);
    expect(rows).toHaveLength(2);
    expect(rows[0]).toMatchObject({ source: 'torch', backend: 'torch-math', status: 'ok', medianMs: 2, headsKV: 2 });
    expect(rows[0]!.tflops).toBeCloseTo(rows[0]!.flops / 2e-3 / 1e12);
    expect(rows[1]).toMatchObject({ backend: 'torch-flash', status: 'unsupported', reason: 'No available kernel' });
  });

  it.skipIf(!hasPython)('reports an unreadable answer with the script stderr', async () => {
    const got = await runTorch(
      torchRequest([problem], ['fwd'], timing, 2, null),
      'python3',
      sink,
      cannedScript('not json'),
    );
    expect(got.available).toBe(false);
    expect(got.available === false && got.reason).toMatch(/without a readable answer/);
  });

  it.skipIf(!hasPython)('the shipped script answers a bad request with a reason', () => {
    const r = spawnSync('python3', [torchScriptPath()], { input: 'not json', encoding: 'utf8' });
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ available: false, reason: expect.stringMatching(/^bad request on stdin/) });
  });

  it.skipIf(!hasPython || hasTorch)('the shipped script says why when torch is missing', async () => {
    const got = await runTorch(torchRequest([problem], ['fwd'], timing, 1, null), 'python3', sink, torchScriptPath());
    expect(got).toEqual({ available: false, reason: expect.stringMatching(/torch is not importable/) });
  });

  it.skipIf(!hasPython)('the shipped script hands torch the random mask as ours is made', () => {
    // test/fake_torch stands in for torch (first on PYTHONPATH) and logs what SDPA and autograd get.
    const log = join(mkdtempSync(join(tmpdir(), 'attn-torch-')), 'calls.jsonl');
    const fake = fileURLToPath(new URL('../../test/fake_torch', import.meta.url));
    const problems: ProblemSpec[] = [
      { ...problem, dtype: 'bfloat16', headsKV: 4, mask: 'additive', seqK: 96 }, // causal + additive
      { ...problem, dtype: 'bfloat16', headsKV: 4, mask: 'bool', causal: false },
    ];
    const request = torchRequest(problems, ['fwd', 'fwdbwd', 'bwd'], timing, 1, ['math', 'efficient']);
    const env = { ...process.env, PYTHONPATH: fake, FAKE_TORCH_LOG: log };
    const r = spawnSync('python3', [torchScriptPath()], { input: JSON.stringify(request), encoding: 'utf8', env });
    expect(r.status).toBe(0);
    const answer = JSON.parse(r.stdout) as {
      available: boolean;
      results: { case: number; backend: string; ok: boolean; reason?: string }[];
    };
    expect(answer.available).toBe(true);
    // torch's math path refuses attn_mask with is_causal=True: an unsupported row with torch's words.
    for (const res of answer.results) {
      if (res.case === 0 && res.backend === 'math')
        expect(res).toMatchObject({
          ok: false,
          reason: expect.stringMatching(/attn_mask should not be set when is_causal/),
        });
      else expect(res.ok).toBe(true);
    }
    type Desc = { shape: number[]; dtype: string; requiresGrad: boolean };
    const calls = readFileSync(log, 'utf8')
      .trim()
      .split('\n')
      .map(
        (l) =>
          JSON.parse(l) as {
            call: string;
            backend: string;
            q?: Desc;
            mask?: Desc;
            isCausal?: boolean;
            inputs?: Desc[];
          },
      );
    const sdpa = calls.filter((c) => c.call === 'sdpa' && c.backend === 'efficient');
    const additive = sdpa.filter((c) => c.mask?.dtype === 'bfloat16');
    const bool = sdpa.filter((c) => c.mask?.dtype === 'bool');
    expect(additive.length + bool.length).toBe(sdpa.length);
    // [B, 1, Sq, Sk]; causal goes along as is_causal; the additive mask needs grad exactly when q does.
    expect(
      additive.every(
        (c) => c.mask!.shape.join() === '2,1,64,96' && c.isCausal && c.mask!.requiresGrad === c.q!.requiresGrad,
      ),
    ).toBe(true);
    expect(additive.some((c) => c.mask!.requiresGrad)).toBe(true);
    expect(bool.every((c) => c.mask!.shape.join() === '2,1,64,64' && !c.isCausal && !c.mask!.requiresGrad)).toBe(true);
    // Backward differentiates the additive mask too (ours computes dbias), never the bool one.
    const grads = calls.filter((c) => c.call === 'grad' && c.backend === 'efficient');
    expect(grads.length).toBeGreaterThan(0);
    for (const g of grads) {
      const mask = g.inputs![3];
      if (g.inputs!.length === 4)
        expect(mask).toEqual({ shape: [2, 1, 64, 96], dtype: 'bfloat16', requiresGrad: true });
      else expect(g.inputs!.map((t) => t.shape[3])).toEqual([32, 32, 32]);
    }
    expect(grads.some((g) => g.inputs!.length === 4) && grads.some((g) => g.inputs!.length === 3)).toBe(true);
  });

  it.skipIf(!hasTorch)('the shipped script times torch on the CPU', async () => {
    const got = await runTorch(
      torchRequest([problem], ['fwd', 'fwdbwd'], timing, 1, null),
      'python3',
      sink,
      torchScriptPath(),
    );
    expect(got.available).toBe(true);
    if (!got.available) return;
    const math = got.results.filter((r) => r.backend === 'math');
    expect(math.map((r) => r.mode)).toEqual(['fwd', 'fwdbwd']);
    expect(math.every((r) => r.ok && r.medianMs! > 0)).toBe(true);
  });
});
