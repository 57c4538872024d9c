// describeFuzz: the property-based suite a backend package's test file calls. Random valid calls
// (fast-check, arbitrary.ts) must give cpu-math's NaN/Inf pattern and pass the accuracy rule, or be
// declined properly; random invalid calls must fail with a coded AttnError. Every case runs in a
// child process (child-pool.ts): a crash or a hang is that case's failure.
//
// Budget: a fixed seed and a run count small enough for CI on two cores by default; a GPU host sets
// ATTN_FUZZ_RUNS (and ATTN_FUZZ_SEED to vary the cases, as ATTN_CONFORMANCE_SEED does for the
// conformance suite). A failure prints the seed, the case and how to rerun it.
import fc from 'fast-check';
import { envTestInt, envTestSanitizer } from '@attn/core';
import type { DeviceLike, FloatDType } from '@attn/core';
import { afterAll, describe, expect, it } from 'vitest';
import { caseSpec, describeSpec } from './arbitrary.js';
import { FuzzChildPool } from './child-pool.js';
import { invalidCase } from './invalid.js';

// The suite's variables are declared in core's TEST_ENV_FLAGS and read through its parsers.
export const FUZZ_SEED_ENV = 'ATTN_FUZZ_SEED';
export const FUZZ_RUNS_ENV = 'ATTN_FUZZ_RUNS';
/**
 * Set to 'memcheck' (or another compute-sanitizer tool) on a GPU host to run the children under
 * compute-sanitizer; pair it with a small ATTN_FUZZ_RUNS (a slice: the sanitizer is ~100x slower).
 * Any error it finds fails the suite through the child's exit code.
 */
export const FUZZ_SANITIZER_ENV = 'ATTN_FUZZ_SANITIZER';
const SANITIZER_EXIT_CODE = 86;

function sanitizerCommand(): string[] | null {
  const tool = envTestSanitizer();
  if (!tool) return null;
  return ['compute-sanitizer', '--tool', tool, '--error-exitcode', String(SANITIZER_EXIT_CODE), '--leak-check', 'no'];
}

export interface FuzzOptions {
  /** Entry files (absolute paths) or package names the child imports: the reference and the backend register on import. */
  readonly modules: readonly string[];
  /** Device of the inputs: 'cpu', 'cuda:0', ... */
  readonly device: DeviceLike;
  readonly dtypes?: readonly FloatDType[];
  /** Valid cases (default ATTN_FUZZ_RUNS, else 300: about 5 s on 2 cores); invalid cases are half as many. */
  readonly runs?: number;
  /** Default ATTN_FUZZ_SEED, else 25: CI runs the same cases every time. */
  readonly seed?: number;
  /** Per case, in the child. */
  readonly timeoutMs?: number;
  /**
   * A lower estimate of the share of random valid cases (caseSpec's draws) the backend's rules accept
   * (default 0.3). The count that must run is runFloor(cases, minRunShare): a binomial lower bound,
   * so that the check means the same for a 30-case sanitizer slice as for 3,000 cases.
   */
  readonly minRunShare?: number;
}

/** The chance that a healthy backend (one that runs at least minRunShare of the draws) fails the run-share check on a seed. */
export const RUN_SHARE_ALPHA = 1e-3;

/**
 * The fewest of `cases` random valid cases a backend must run: the largest k with P(X < k) <= alpha
 * for X ~ Binomial(cases, share), where share is the backend's expected run share. A backend whose
 * rules accept at least that share of the draws fails with probability at most alpha on any seed and
 * any slice size; one that runs nothing fails whenever the floor is at least 1, that is whenever
 * (1 - share)^cases <= alpha: from 20 cases at share 0.3, 227 at 0.03. Below that size the slice
 * cannot tell the two apart by counting (the suite says so and needs a larger one for that).
 */
export function runFloor(cases: number, share: number, alpha = RUN_SHARE_ALPHA): number {
  if (!(share > 0) || cases <= 0) return 0;
  if (share >= 1) return cases;
  // log P(X = k), updated from k to k + 1; the sum of P(X = j) for j < k is P(X < k).
  const ratio = Math.log(share) - Math.log1p(-share);
  let logPmf = cases * Math.log1p(-share);
  let below = 0;
  for (let k = 0; k <= cases; k++) {
    const pmf = Math.exp(logPmf);
    if (below + pmf > alpha) return k;
    below += pmf;
    logPmf += Math.log(cases - k) - Math.log(k + 1) + ratio;
  }
  return cases;
}

export function describeFuzz(backend: string, options: FuzzOptions): void {
  const seed = options.seed ?? envTestInt(FUZZ_SEED_ENV) ?? 25;
  const runs = options.runs ?? envTestInt(FUZZ_RUNS_ENV) ?? 300;
  const invalidRuns = Math.max(20, Math.floor(runs / 2));
  const timeoutMs = options.timeoutMs ?? 60_000;
  const sanitizer = sanitizerCommand();
  const pool = new FuzzChildPool(options.modules, sanitizer ? timeoutMs * 50 : timeoutMs, sanitizer);
  const rerun = `rerun with ${FUZZ_SEED_ENV}=${seed} ${FUZZ_RUNS_ENV}=${runs}`;
  // Rough per-case cost on a slow CPU, plus the child's start: the test's own time limit.
  const testTimeout = 20_000 + runs * 2_000;

  describe(`fuzz: '${backend}' against cpu-math (seed ${seed}, ${runs} cases${sanitizer ? `, under ${sanitizer.slice(0, 3).join(' ')}` : ''})`, () => {
    afterAll(() => pool.close());

    it(
      'valid calls: the reference NaN/Inf pattern and accuracy, or a proper decline; no crash',
      { timeout: testTimeout },
      async () => {
        const tally = { ok: 0, declined: 0 };
        await fc.assert(
          fc.asyncProperty(
            caseSpec(options.dtypes),
            fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }),
            async (spec, caseSeed) => {
              const r = await pool.run('runValid', backend, spec, caseSeed, options.device);
              // The suite runs where the backend is available: a decline for being unavailable is its addon failing mid-run.
              const unavailable = r.status === 'declined' && r.message.startsWith('unavailable:');
              if (r.status === 'ok') tally.ok++;
              else if (r.status === 'declined' && !unavailable) tally.declined++;
              else
                throw new Error(
                  `${unavailable ? 'unavailable' : r.status}: ${r.message}\n  case: ${describeSpec(spec)}\n  input seed ${caseSeed}; ${rerun}`,
                );
            },
          ),
          { seed, numRuns: runs, endOnFailure: true },
        );
        const share = options.minRunShare ?? 0.3;
        const floor = runFloor(runs, share);
        console.log(
          `fuzz '${backend}': ${tally.ok} cases ran and matched cpu-math, ${tally.declined} declined properly (seed ${seed}); ` +
            (floor > 0
              ? `at least ${floor} must run (run share ${share}, binomial floor at ${RUN_SHARE_ALPHA})`
              : `${runs} cases are too few to check the run share ${share} (a backend that runs it would run none ${((1 - share) ** runs * 100).toFixed(0)}% of the time)`),
        );
        expect(
          tally.ok,
          `too few cases ran (${tally.ok} of ${runs}, at least ${floor} expected at run share ${share}); the backend declines almost everything`,
        ).toBeGreaterThanOrEqual(floor);
      },
    );

    it(
      'invalid calls: an AttnError with a code, never a TypeError, a result or a crash',
      { timeout: 20_000 + invalidRuns * 1_000 },
      async () => {
        await fc.assert(
          fc.asyncProperty(invalidCase, async (c) => {
            const r = await pool.run('runInvalid', c);
            if (r.status !== 'ok') throw new Error(`${r.status}: ${r.message}\n  case: ${JSON.stringify(c)}; ${rerun}`);
          }),
          { seed, numRuns: invalidRuns, endOnFailure: true },
        );
      },
    );

    it.runIf(sanitizer !== null)('the sanitizer found nothing in any child', { timeout: 120_000 }, async () => {
      const exits = await pool.close();
      const bad = exits.filter((e) => e.code === SANITIZER_EXIT_CODE);
      expect(
        bad,
        `${bad.length} child process(es) exited with the sanitizer's error code; its report is in the output above`,
      ).toEqual([]);
    });
  });
}
