import { describe, expect, it } from 'vitest';
import {
  envNumThreads,
  envTestGate,
  envTestInt,
  envTestSanitizer,
  envTestSeed,
  MAX_NUM_THREADS,
  RUNTIME_ENV_FLAGS,
  TEST_ENV_FLAGS,
} from './env-flags.js';
import { AttnInputError } from './errors.js';

describe('runtime environment flags', () => {
  it('ATTN_NUM_THREADS: unset or blank is null, an integer in range is itself, anything else a typed error', () => {
    expect(envNumThreads({})).toBeNull();
    expect(envNumThreads({ ATTN_NUM_THREADS: ' ' })).toBeNull();
    expect(envNumThreads({ ATTN_NUM_THREADS: '3' })).toBe(3);
    expect(envNumThreads({ ATTN_NUM_THREADS: String(MAX_NUM_THREADS) })).toBe(MAX_NUM_THREADS);
    for (const bad of ['0', '-1', '2.5', 'many', String(MAX_NUM_THREADS + 1)]) {
      expect(() => envNumThreads({ ATTN_NUM_THREADS: bad })).toThrow(AttnInputError);
    }
  });

  it('declares the thread count as the only run-time variable', () => {
    expect(Object.keys(RUNTIME_ENV_FLAGS)).toEqual(['ATTN_NUM_THREADS']);
  });
});

describe('test-suite environment flags', () => {
  it('declares every variable the suites read, once', () => {
    expect(Object.keys(TEST_ENV_FLAGS).sort()).toEqual([
      'ATTN_CONFORMANCE_SEED',
      'ATTN_FUZZ_RUNS',
      'ATTN_FUZZ_SANITIZER',
      'ATTN_FUZZ_SEED',
      'ATTN_REQUIRE_GPU',
      'ATTN_REQUIRE_ROCM',
      'ATTN_SOAK_CALLS',
    ]);
    for (const name of Object.keys(TEST_ENV_FLAGS)) expect(name in RUNTIME_ENV_FLAGS).toBe(false);
  });

  it('gates: 1 is on; unset, blank and 0 are off; anything else a typed error', () => {
    expect(envTestGate('ATTN_REQUIRE_GPU', { ATTN_REQUIRE_GPU: '1' })).toBe(true);
    expect(envTestGate('ATTN_REQUIRE_ROCM', {})).toBe(false);
    expect(envTestGate('ATTN_REQUIRE_GPU', { ATTN_REQUIRE_GPU: ' ' })).toBe(false);
    expect(envTestGate('ATTN_REQUIRE_GPU', { ATTN_REQUIRE_GPU: '0' })).toBe(false);
    for (const bad of ['yes', 'true', '2']) {
      expect(() => envTestGate('ATTN_REQUIRE_GPU', { ATTN_REQUIRE_GPU: bad })).toThrow(
        expect.objectContaining({ code: 'ATTN_REQUIRE_GPU' }),
      );
    }
  });

  it('counts and seeds: unset is null, a non-negative integer is itself, anything else a typed error', () => {
    expect(envTestInt('ATTN_SOAK_CALLS', {})).toBeNull();
    expect(envTestInt('ATTN_FUZZ_RUNS', { ATTN_FUZZ_RUNS: '0' })).toBe(0);
    expect(envTestInt('ATTN_FUZZ_SEED', { ATTN_FUZZ_SEED: '25' })).toBe(25);
    for (const bad of ['-1', '2.5', 'many']) {
      expect(() => envTestInt('ATTN_SOAK_CALLS', { ATTN_SOAK_CALLS: bad })).toThrow(AttnInputError);
    }
    expect(envTestSeed('ATTN_CONFORMANCE_SEED', {})).toBeNull();
    expect(envTestSeed('ATTN_CONFORMANCE_SEED', { ATTN_CONFORMANCE_SEED: '18446744073709551615' })).toBe(
      18446744073709551615n,
    );
    for (const bad of ['-1', '18446744073709551616', '1.5', 'x']) {
      expect(() => envTestSeed('ATTN_CONFORMANCE_SEED', { ATTN_CONFORMANCE_SEED: bad })).toThrow(AttnInputError);
    }
  });

  it("the fuzz sanitizer: one of compute-sanitizer's tools", () => {
    expect(envTestSanitizer({})).toBeNull();
    expect(envTestSanitizer({ ATTN_FUZZ_SANITIZER: 'racecheck' })).toBe('racecheck');
    expect(() => envTestSanitizer({ ATTN_FUZZ_SANITIZER: 'valgrind' })).toThrow(AttnInputError);
  });
});
