// The `attn` program end to end, in-process, on the CPU backends that are registered.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { dtypeIn, headDimAtMost, registerBackend, unregisterBackend, type Backend } from '@attn/core';
import { cpuFlashBackend } from '@attn/cpu';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { memoryIO } from './io.js';
import { EXIT_FAILED, EXIT_OK, EXIT_USAGE, main } from './program.js';
import { cpuInfo } from './runtime/cpu-info.js';

/** A command line's words (none of them has a space). */
const words = (line: string): string[] => line.split(' ');

async function attn(...argv: string[]) {
  const io = memoryIO();
  const code = await main(argv, io);
  return { code, out: io.out(), err: io.err() };
}

/** A CPU backend that declines head dims above 32 and float64: its reasons must show in explain. */
const picky: Backend = {
  name: 'test-picky',
  deviceType: 'cpu',
  defaultPriority: 1000,
  description: 'declines most calls (test)',
  availability: () => ({ ok: true }),
  rules: [headDimAtMost(32), dtypeIn(['float16'])],
  forward: () => {
    throw new Error('test-picky never runs');
  },
};

beforeAll(() => registerBackend(picky));
afterAll(() => unregisterBackend(picky.name));

describe('usage errors exit 2 with what to change', () => {
  it.each([
    [['run', '--shape', '1,8,512'], /four comma-separated sizes B,H,S,D/],
    [['run', '--shape', '1,8,x,64'], /size S: 'x' is not an integer/],
    [['run'], /required option '--shape <B,H,S,D>' not specified/],
    [
      ['explain', '--shape', '1,2,16,16', '--backends', 'no-such-backend'],
      /Unknown backend 'no-such-backend': registered backends are .*cpu-math/,
    ],
    [
      ['run', '--shape', '1,2,16,16', '--dtype', 'int8'],
      /Allowed choices are float64, float32, float16, bfloat16, float8_e4m3/,
    ],
    [
      ['bench', '--device', 'cpu', '--dtype', 'float8_e4m3', '--mode', 'fwd,bwd'],
      /float8_e4m3 inputs have a forward only/,
    ],
    [['run', '--shape', '1,2,16,16', '--repeat', '0'], /expected a positive integer/],
    [['run', '--shape', '1,2,16,16', '--dropout', '1.5'], /\[0, 1\)/],
    [['bench', '--decode', '--seq', '512'], /option '--decode' cannot be used with option '--seq <list>'/],
    [['bench', '--causal', '--non-causal'], /cannot be used with option '--non-causal'/],
    [['bench', '--overhead', '--dim', '64'], /option '--overhead' cannot be used with option '--dim <list>'/],
    [['bench', '--overhead', '--loop', '4'], /option '--loop <calls>' cannot be used with option '--overhead'/],
    [['bench', '--loop', '0'], /expected a positive integer/],
    [['bench', '--device', 'cpu', '--plot', 'chart.png'], /must end in .svg or .html/],
    [['bench', '--device', 'cpu', '--backends', 'nope'], /Unknown backend 'nope'/],
    [
      ['bench', '--device', 'cpu', '--backends', 'cpu-math', '--kernel', 'avx2'],
      /No kernel named 'avx2' among cpu-math; kernels: cpu-flash: portable, avx2/,
    ],
    [['bench', '--mode', 'fwd,sideways'], /'sideways' is not one of fwd, bwd, fwdbwd/],
    [['bench', '--device', 'cpu', '--overhead', '--index-values-on-device'], /--index-values-on-device needs --varlen/],
    [
      ['bench', '--device', 'cpu', '--overhead', '--varlen', '--mode', 'fwdbwd'],
      /--varlen time forward calls: use --mode fwd/,
    ],
    [['bench', '--device', 'cpu', '--overhead', '--out', '--mode', 'bwd'], /--out time forward calls/],
    [
      ['bench', '--device', 'cpu', '--varlen', '--mask', 'bool'],
      /option '--varlen' cannot be used with option '--mask <kind>'/,
    ],
    [['frobnicate'], /unknown command 'frobnicate'/],
  ])('attn %j', async (argv, message) => {
    const r = await attn(...argv);
    expect(r.code).toBe(EXIT_USAGE);
    expect(r.err).toMatch(message);
  });

  it('prints help without arguments', async () => {
    const r = await attn();
    expect(r.code).toBe(EXIT_USAGE);
    expect(r.out).toMatch(/doctor[\s\S]*explain[\s\S]*run[\s\S]*bench/);
  });

  it('passes core input errors on with a command-line hint (exit 1)', async () => {
    const r = await attn('explain', '--shape', '1,8,16,16', '--kv-heads', '2');
    expect(r.code).toBe(EXIT_FAILED);
    expect(r.err).toMatch(/enableGqa[\s\S]*\[ATTN_GQA\][\s\S]*hint: .*--gqa/);
  });

  it('adds the stack under --debug, wherever it stands, and only then', async () => {
    const argv = ['explain', '--shape', '1,8,16,16', '--kv-heads', '2'];
    const plain = await attn(...argv);
    expect(plain.err).not.toMatch(/\n\s+at /);
    for (const r of [await attn('--debug', ...argv), await attn(...argv, '--debug')]) {
      expect(r.code).toBe(EXIT_FAILED);
      expect(r.err).toMatch(/\[ATTN_GQA\][\s\S]*\n\s+at /);
    }
  });

  it('says how to get a device that is not there', async () => {
    const r = await attn('run', '--shape', '1,2,16,16', '--device', 'rocm');
    expect(r.code).toBe(EXIT_FAILED);
    expect(r.err).toMatch(/rocm[\s\S]*--device cpu/);
  });
});

describe('attn explain', () => {
  it('lists every candidate with each reason it declines', async () => {
    const r = await attn('explain', '--shape', '1,4,32,64', '--device', 'cpu', '--dtype', 'float32', '--causal');
    expect(r.code).toBe(EXIT_OK);
    expect(r.out).toContain('B=1 H=4 S=32 D=64, float32, causal');
    expect(r.out).toMatch(/cpu-(math|flash) runs this call/);
    expect(r.out).toMatch(/\d\. cpu-math \(priority -?\d+\): /);
    expect(r.out).toMatch(/test-picky \(priority 1000\): rejected \(2 rules\)/);
    expect(r.out).toMatch(/headDimAtMost.*64/);
    expect(r.out).toMatch(/dtypeIn.*float32/);
  });

  it('prints the report as JSON', async () => {
    const r = await attn(...words('explain --shape 2,4,8,16 --kv-heads 2 --gqa --seq-k 24 --device cpu --json'));
    expect(r.code).toBe(EXIT_OK);
    const { problem, report } = JSON.parse(r.out);
    expect(problem).toMatchObject({ batch: 2, headsQ: 4, headsKV: 2, seqQ: 8, seqK: 24, enableGqa: true });
    expect(report.selected).toMatch(/^cpu-(math|flash)$/);
    const picked = report.candidates.find((c: { backend: string }) => c.backend === 'test-picky');
    expect(picked.reasons.map((x: { rule: string }) => x.rule)).toEqual([expect.stringMatching(/^dtypeIn/)]);
  });

  it('honours --kernel: the backend that declares it, named in the report; an unknown name is an input error', async () => {
    const r = await attn('explain', '--shape', '1,1,8,16', '--device', 'cpu', '--kernel', 'portable', '--json');
    const { report } = JSON.parse(r.out);
    expect(report).toMatchObject({ kernel: 'portable', restrictedTo: ['cpu-flash'] });
    expect(report.call).toContain('kernel portable');
    const bad = await attn('explain', '--shape', '1,1,8,16', '--device', 'cpu', '--kernel', 'sm42');
    expect(bad.code).toBe(EXIT_FAILED);
    expect(bad.err).toMatch(/No kernel named "sm42"; kernels: .*cpu-flash: portable/);
  });

  it('honours --backends as a restriction', async () => {
    const r = await attn('explain', '--shape', '1,1,8,64', '--device', 'cpu', '--backends', 'test-picky', '--json');
    const { report } = JSON.parse(r.out);
    expect(report.selected).toBeNull();
    expect(report.restrictedTo).toEqual(['test-picky']);
  });
});

describe('attn run', () => {
  it('prints backend, reasons, time, rate and error against the reference', async () => {
    const r = await attn(...words('run --shape 1,2,32,16 --device cpu --dtype float32 --causal --repeat 3 --warmup 1'));
    expect(r.code).toBe(EXIT_OK);
    expect(r.out).toMatch(/test-picky.*rejected/);
    expect(r.out).toMatch(/^backend\s+cpu-(math|flash)$/m);
    expect(r.out).toMatch(/^time\s+[\d.]+ (us|ms|s) median of 3/m);
    expect(r.out).toMatch(/^loop\s+[\d.]+ (us|ms|s) per call over \d+ back-to-back calls with their outputs disposed/m);
    expect(r.out).toMatch(/^rate\s+[\d.]+ [GT]FLOP\/s$/m);
    expect(r.out).toMatch(/^error\s+out max abs \d\.\d\de-\d+.*vs cpu-math \(float64\)/m);
  });

  it('reports JSON with the FLOP count and errors; backward modes check gradients', async () => {
    const r = await attn(...words('run --shape 1,2,16,8 --device cpu --mode fwdbwd --repeat 2 --warmup 0 --json'));
    expect(r.code).toBe(EXIT_OK);
    const res = JSON.parse(r.out);
    expect(res.backend).toMatch(/^cpu-(math|flash)$/);
    expect(res.flops).toBe(3.5 * 4 * 1 * 2 * 16 * 16 * 8);
    expect(res.flopsPerSecond).toBeGreaterThan(0);
    expect(res.timing.count).toBe(2);
    expect(res.loop).toMatchObject({ loops: 5, calls: expect.any(Number) });
    expect(res.loop.perCallMs).toBeGreaterThan(0);
    expect(res.loop.hostPerCallMs).toBeGreaterThan(0);
    expect(res.check.status).toBe('ok');
    expect(Object.keys(res.check.errors)).toEqual(['out', 'dq', 'dk', 'dv']);
    for (const e of Object.values(res.check.errors) as { maxRel: number }[]) expect(e.maxRel).toBeLessThan(1e-4);
  });

  it('says when the check is skipped', async () => {
    const r = await attn('run', '--shape', '1,2,16,8', '--device', 'cpu', '--repeat', '1', '--check-limit', '10');
    expect(r.out).toMatch(/error\s+skipped: B\*H\*Sq\*Sk = 512 is above the check limit 10/);
    const off = await attn('run', '--shape', '1,2,16,8', '--device', 'cpu', '--repeat', '1', '--no-check');
    expect(off.out).toMatch(/error\s+skipped: disabled by --no-check/);
  });

  it('runs float8_e4m3 inputs (descale 1, bfloat16 out) on cpu-math, checked against float64, forward only', async () => {
    const r = await attn(
      ...words('run --shape 1,2,17,64 --device cpu --dtype float8_e4m3 --repeat 2 --warmup 0 --json'),
    );
    expect(r.code).toBe(EXIT_OK);
    const res = JSON.parse(r.out);
    expect(res.backend).toBe('cpu-math'); // cpu-flash and test-picky decline fp8 (float8Inputs)
    expect(res.check.status).toBe('ok');
    expect(res.check.errors.out.maxRel).toBeLessThan(1e-2); // bf16's rounding of the output
    const grad = await attn(...words('run --shape 1,2,17,64 --device cpu --dtype float8_e4m3 --mode fwdbwd'));
    expect(grad.code).not.toBe(EXIT_OK);
    expect(grad.out + grad.err).toMatch(/float8_e4m3/);
  });

  it('exits 1 with the reasons when no backend supports the call', async () => {
    const r = await attn('run', '--shape', '1,1,8,64', '--device', 'cpu', '--backends', 'test-picky');
    expect(r.code).toBe(EXIT_FAILED);
    expect(r.out).toMatch(/No backend ran[\s\S]*/);
    expect(r.out).toMatch(/headDimAtMost/);
  });
});

describe('attn doctor', () => {
  it('describes the host, packages and backends', async () => {
    const r = await attn('doctor');
    expect(r.code).toBe(EXIT_OK);
    expect(r.out).toMatch(/Node\s+v\d+/);
    expect(r.out).toMatch(/CPU\s+.+\d+ threads/);
    expect(r.out).toMatch(/@attn\/cpu\s+installed/);
    expect(r.out).toMatch(/cpu-math\s+cpu, priority \d+, available/);
    expect(r.out).toMatch(/kernel avx2: AVX2/);
    const json = JSON.parse((await attn('doctor', '--json')).out);
    expect(
      json.backends.find((b: { name: string }) => b.name === 'cpu-flash').kernels.map((k: { name: string }) => k.name),
    ).toEqual(['portable', 'avx2', 'avx512', 'avx512bf16', 'amx', 'neon', 'sve256']);
  });

  it('answers JSON with every known package', async () => {
    const r = await attn('doctor', '--json');
    const d = JSON.parse(r.out);
    expect(d.packages.map((p: { name: string }) => p.name)).toEqual(
      expect.arrayContaining([
        '@attn/cpu',
        '@attn/cuda',
        '@attn/flash-cuda',
        '@attn/cutlass-memeff',
        '@attn/rocm',
        '@attn/rocm-aotriton',
        '@attn/rocm-ck',
      ]),
    );
    expect(d.runtimes.map((x: { type: string }) => x.type)).toEqual(['cuda', 'rocm']);
    const math = d.backends.find((b: { name: string }) => b.name === 'cpu-math');
    expect(math).toMatchObject({ device: 'cpu', available: true });
    expect(d.host.cpu.threads).toBeGreaterThan(0);
  });
});

describe('attn bench (CPU smoke run)', () => {
  it('writes a table, JSON with the numbers, and a chart with axes and a series per backend and mode', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'attn-bench-'));
    const json = join(dir, 'bench.json');
    const plot = join(dir, 'bench.svg');
    // No --backends: every available CPU backend, including test-picky, which declines float32.
    const r = await attn(
      ...words(
        'bench --device cpu --seq 16,32 --dim 16 --tokens 32 --hidden 32 --mode fwd,fwdbwd --repeat 2 --warmup 0 --json',
      ),
      json,
      '--plot',
      plot,
    );
    expect(r.code).toBe(EXIT_OK);
    expect(r.err).toMatch(/\[1\/\d+\] test-picky fwd B=2 H=2 S=16 D=16: unsupported: dtypeIn/); // plain progress lines off a TTY
    expect(r.out).toMatch(/┌[\s\S]*backend[\s\S]*cpu-math[\s\S]*fwdbwd/);

    const report = JSON.parse(readFileSync(json, 'utf8'));
    const backends: string[] = [...new Set<string>(report.rows.map((x: { backend: string }) => x.backend))];
    expect(backends).toEqual(expect.arrayContaining(['test-picky', 'cpu-math']));
    expect(report.rows).toHaveLength(backends.length * 2 * 2 * 2);
    const ok = report.rows.filter((x: { status: string }) => x.status === 'ok');
    const ran = [...new Set<string>(ok.map((x: { backend: string }) => x.backend))];
    expect(ran).toContain('cpu-math');
    expect(ran).not.toContain('test-picky');
    expect(ok).toHaveLength(ran.length * 8);
    for (const row of ok) {
      expect(row).toMatchObject({ source: 'attn', headDim: 16, headsQ: 2 });
      expect(row.batch * row.seqQ).toBe(32);
      expect(row.medianMs).toBeGreaterThan(0);
      expect(row.tflops).toBeCloseTo(row.flops / (row.medianMs / 1000) / 1e12, 10);
    }
    const fwd = ok.find(
      (x: { mode: string; causal: boolean; seqQ: number }) => x.mode === 'fwd' && !x.causal && x.seqQ === 32,
    );
    expect(fwd.flops).toBe(4 * 1 * 2 * 32 * 32 * 16);

    const svg = readFileSync(plot, 'utf8');
    expect(svg.match(/role-axis"/g)).toHaveLength(4); // two panels (causal, non-causal), x and y each
    for (const b of ran) {
      expect(svg).toContain(`>${b} fwd<`);
      expect(svg).toContain(`>${b} fwdbwd<`);
    }
    expect(svg).not.toContain('>test-picky');
    expect(svg.match(/class="mark-line role-mark"/g)).toHaveLength(2 * 2 * ran.length);
    expect(svg).toMatch(/[GT]FLOP\/s/);
  });

  it('refuses an output path it cannot write before running the grid', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'attn-bench-'));
    for (const flag of ['--plot', '--json']) {
      const path = join(dir, 'missing', flag === '--plot' ? 'x.svg' : 'x.json');
      const r = await attn(
        ...words(
          'bench --device cpu --backends cpu-math --seq 16 --dim 16 --tokens 16 --hidden 16 --repeat 1 --warmup 0',
        ),
        flag,
        path,
      );
      expect(r.code).toBe(EXIT_USAGE);
      expect(r.err).toMatch(new RegExp(`${flag} .*missing.* does not exist`));
      expect(r.out).not.toMatch(/attn bench on/); // failed before the run began
    }
  });

  it('marks unsupported backends with their reason and still runs the others', async () => {
    const r = await attn(
      ...words(
        'bench --device cpu --backends test-picky,cpu-math --seq 16 --dim 16 --tokens 16 --hidden 16 --causal --repeat 1 --warmup 0 --quiet',
      ),
    );
    expect(r.code).toBe(EXIT_OK);
    expect(r.err).toBe('');
    expect(r.out).toMatch(/Not run:\n\s+test-picky fwd unsupported: dtypeIn/);
  });

  it('--kernel benches the backends that declare it, each call asking for it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'attn-bench-kernel-'));
    const json = join(dir, 'k.json');
    const r = await attn(
      ...words(
        'bench --device cpu --kernel portable --seq 16 --dim 16 --tokens 16 --hidden 16 --non-causal --repeat 1 --warmup 0 --warmup-ms 0 --quiet --json',
      ),
      json,
    );
    expect(r.code).toBe(EXIT_OK);
    const rows = JSON.parse(readFileSync(json, 'utf8')).rows as { backend: string; features: string }[];
    expect(rows.length).toBeGreaterThan(0);
    for (const row of rows)
      expect(row).toMatchObject({ backend: 'cpu-flash', features: expect.stringContaining('kernel portable') });
  });

  it('states the CPU, kernel path, threads and torch version in the header and the JSON', async () => {
    // test/fake_torch stands in for torch (first on PYTHONPATH): the facts, not the numbers, are tested.
    const hasPython = spawnSync('python3', ['--version']).status === 0;
    if (!hasPython) return void console.warn('program.test: python3 is missing; the torch header facts are not tested');
    const dir = mkdtempSync(join(tmpdir(), 'attn-bench-facts-'));
    const json = join(dir, 'f.json');
    const before = process.env.PYTHONPATH;
    process.env.PYTHONPATH = fileURLToPath(new URL('../test/fake_torch', import.meta.url));
    let r: Awaited<ReturnType<typeof attn>>;
    try {
      r = await attn(
        ...words(
          'bench --device cpu --backends cpu-math --seq 16 --dim 16 --tokens 16 --hidden 16 --non-causal --threads 3 --repeat 1 --warmup 0 --warmup-ms 0 --compare torch --torch-backends math --quiet --json',
        ),
        json,
      );
    } finally {
      if (before === undefined) delete process.env.PYTHONPATH;
      else process.env.PYTHONPATH = before;
    }
    expect(r.code).toBe(EXIT_OK);
    const cpu = cpuInfo();
    const header = r.out.slice(0, r.out.indexOf('┌'));
    expect(header).toContain(
      `  cpu: ${cpu.model}${cpu.id ? ` [${cpu.id}]` : ''}, ${process.platform}-${process.arch}, ${cpu.threads} logical CPUs`,
    );
    expect(header).toMatch(/; 3 CPU threads/);
    expect(header).toContain(
      '  torch 0.0-fake on cpu (ATen capability FAKE_SIMD): 3 threads (ours 3), timed with time.perf_counter',
    );
    expect(r.err).toBe(''); // --quiet: no progress from either side
    const report = JSON.parse(readFileSync(json, 'utf8'));
    expect(report.machine).toEqual({ platform: `${process.platform}-${process.arch}`, cpu: { ...cpu } });
    expect(report.threads).toEqual({ attn: 3, torch: 3 });
    expect(report.torch).toMatchObject({ available: true, version: '0.0-fake', capability: 'FAKE_SIMD', threads: 3 });
    expect(report.paths).toEqual({}); // cpu-math states no kernel path
  });

  it.skipIf(!cpuFlashBackend.availability().ok)(
    'with --kernel, the header and JSON give the paths of the kernel asked for',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'attn-bench-paths-'));
      const json = join(dir, 'p.json');
      const r = await attn(
        ...words(
          'bench --device cpu --kernel portable --dtype bfloat16 --seq 16 --dim 16 --tokens 16 --hidden 16 --non-causal --threads 2 --repeat 1 --warmup 0 --warmup-ms 0 --quiet --json',
        ),
        json,
      );
      expect(r.code).toBe(EXIT_OK);
      expect(r.out).toMatch(
        /\n {2}cpu-flash: kernel portable, isa portable, forward portable\/\S+, backward portable\/\S+, threads 2\n/,
      );
      const report = JSON.parse(readFileSync(json, 'utf8'));
      expect(report.paths['cpu-flash']).toMatchObject({
        kernel: 'portable',
        isa: 'portable',
        forward: expect.stringMatching(/^portable\//),
        threads: 2,
      });
      expect(report.threads).toEqual({ attn: 2, torch: null });
      expect(report.torch).toBeNull();
    },
  );

  it('--strict exits 1 when one of our backends throws on a case, and says so', async () => {
    const throws: Backend = {
      ...picky,
      name: 'test-throws',
      rules: [],
      forward: () => {
        throw new Error('kernel fault (test)');
      },
    };
    registerBackend(throws);
    try {
      const args = [
        'bench',
        '--device',
        'cpu',
        '--backends',
        'test-throws,cpu-math',
        '--seq',
        '16',
        '--dim',
        '16',
        '--tokens',
        '16',
        '--hidden',
        '16',
        '--non-causal',
        '--repeat',
        '1',
        '--warmup',
        '0',
        '--warmup-ms',
        '0',
        '--quiet',
      ];
      const loose = await attn(...args);
      expect(loose.code).toBe(EXIT_OK); // cpu-math ran; the failure is a row
      expect(loose.out).toMatch(/test-throws fwd failed: kernel fault \(test\)/);
      const strict = await attn(...args, '--strict');
      expect(strict.code).toBe(EXIT_FAILED);
      expect(strict.err).toMatch(/--strict: 1 of our case\(s\) failed/);
    } finally {
      unregisterBackend(throws.name);
    }
  });

  it('measures per-call overhead', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'attn-bench-'));
    const json = join(dir, 'o.json');
    const r = await attn(
      ...words(
        'bench --device cpu --backends cpu-math --overhead --non-causal --repeat 2 --warmup 0 --warmup-ms 0 --quiet --json',
      ),
      json,
    );
    expect(r.code).toBe(EXIT_OK);
    expect(r.out).toMatch(
      /overhead grid, 1 case\(s\).*warm-up 0 ms \(and at least 0\) of loops of 1000 back-to-back calls, each disposing its outputs, then the median of up to 2 such loops/,
    );
    const rows = JSON.parse(readFileSync(json, 'utf8')).rows;
    expect(rows).toEqual([expect.objectContaining({ batch: 1, headsQ: 1, seqQ: 16, headDim: 64, status: 'ok' })]);
  });

  it('times a grid in loops of back-to-back calls (--loop)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'attn-bench-'));
    const json = join(dir, 'l.json');
    const r = await attn(
      ...words(
        'bench --device cpu --backends cpu-math --seq 16 --dim 8 --non-causal --loop 3 --repeat 2 --warmup 0 --warmup-ms 0 --quiet --json',
      ),
      json,
    );
    expect(r.code).toBe(EXIT_OK);
    expect(r.out).toMatch(
      /of loops of 3 back-to-back calls, each disposing its outputs, then the median of up to 2 such loops/,
    );
    const report = JSON.parse(readFileSync(json, 'utf8'));
    expect(report.settings).toMatchObject({ loop: 3 });
    expect(report.rows).toEqual([expect.objectContaining({ seqQ: 16, headDim: 8, status: 'ok' })]);
  });

  it('times the loop of varlen calls writing into a preallocated out', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'attn-bench-'));
    const json = join(dir, 'v.json');
    const r = await attn(
      ...words(
        'bench --device cpu --backends cpu-math --overhead --varlen --out --non-causal --repeat 2 --warmup 0 --warmup-ms 0 --quiet --json',
      ),
      json,
    );
    expect(r.code).toBe(EXIT_OK);
    expect(r.out).toMatch(/loops of 1000 back-to-back calls.*calls: sdpaVarlen, a preallocated out/);
    const rows = JSON.parse(readFileSync(json, 'utf8')).rows;
    expect(rows).toEqual([
      expect.objectContaining({ seqQ: 16, status: 'ok', features: expect.stringMatching(/varlen.*preallocated out/) }),
    ]);
  });
});
