import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PLAIN_FEATURES, type ProblemSpec } from '../problem.js';
import { runTorch, torchIncompatibility, torchRequest, torchRows, torchScriptPath } from './torch.js';

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
const timing = { warmup: 1, repeat: 3, budgetMs: 1000 };

const python = spawnSync('python3', ['-c', 'import sys; print(sys.version_info[0])'], { encoding: 'utf8' });
const hasPython = python.status === 0 && python.stdout.trim() === '3';
const hasTorch = hasPython && spawnSync('python3', ['-c', 'import torch'], { encoding: 'utf8' }).status === 0;
if (!hasPython) console.warn('compare/torch.test: python3 is missing; the tests that run the shipped script are skipped');

/** A stand-in for the script: prints a canned answer (tests the protocol, not torch). */
function cannedScript(answer: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'attn-torch-'));
  const path = join(dir, 'answer.py');
  writeFileSync(path, `import sys, json\njson.load(sys.stdin)\nprint(sys.stdin.read(), end='')\nsys.stdout.write(${JSON.stringify(answer)})\n`);
  return path;
}

describe('--compare torch', () => {
  it('asks for the CPU backends with our thread count', () => {
    const r = torchRequest([problem], ['fwd', 'bwd'], timing, 3, null);
    expect(r).toMatchObject({ device: 'cpu', threads: 3, dtype: 'float32', modes: ['fwd', 'bwd'], backends: ['math', 'flash'] });
    expect(r.cases[0]).toMatchObject({ id: 0, headsQ: 4, headsKV: 2, causal: true, alignment: 'upperLeft' });
    expect(torchRequest([{ ...problem, device: 'cuda:1' }], ['fwd'], timing, 3, null)).toMatchObject({ device: 'cuda', deviceIndex: 1, backends: ['flash', 'efficient', 'cudnn', 'math'] });
  });

  it('does not compare features torch lacks', () => {
    expect(torchIncompatibility(problem)).toBeNull();
    expect(torchIncompatibility({ ...problem, window: [8, 0], softcap: 30 })).toMatch(/a window, softcap/);
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
    const got = await runTorch(torchRequest([problem], ['fwd'], timing, 2, null), 'python3', sink, cannedScript(JSON.stringify(answer)));
    expect(got).toEqual(answer);
    const rows = torchRows([problem], got);
    expect(rows).toHaveLength(2);
    expect(rows[0]).toMatchObject({ source: 'torch', backend: 'torch-math', status: 'ok', medianMs: 2, headsKV: 2 });
    expect(rows[0]!.tflops).toBeCloseTo(rows[0]!.flops / 2e-3 / 1e12);
    expect(rows[1]).toMatchObject({ backend: 'torch-flash', status: 'unsupported', reason: 'No available kernel' });
  });

  it.skipIf(!hasPython)('reports an unreadable answer with the script stderr', async () => {
    const got = await runTorch(torchRequest([problem], ['fwd'], timing, 2, null), 'python3', sink, cannedScript('not json'));
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

  it.skipIf(!hasTorch)('the shipped script times torch on the CPU', async () => {
    const got = await runTorch(torchRequest([problem], ['fwd', 'fwdbwd'], timing, 1, null), 'python3', sink, torchScriptPath());
    expect(got.available).toBe(true);
    if (!got.available) return;
    const math = got.results.filter((r) => r.backend === 'math');
    expect(math.map((r) => r.mode)).toEqual(['fwd', 'fwdbwd']);
    expect(math.every((r) => r.ok && r.medianMs! > 0)).toBe(true);
  });
});
