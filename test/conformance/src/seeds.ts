// Seeds of a conformance run: one base seed (given, ATTN_CONFORMANCE_SEED, or fresh and printed on
// failure) and one derived seed per case, so a failing case reruns alone from the base seed.
import { envTestSeed, randomSeed } from '@attn/core';

export const SEED_ENV = 'ATTN_CONFORMANCE_SEED'; // declared in core's TEST_ENV_FLAGS

export function baseSeed(
  option: bigint | number | undefined,
  env: Readonly<Record<string, string | undefined>> = process.env,
): bigint {
  if (option !== undefined) return BigInt(option);
  return envTestSeed(SEED_ENV, env) ?? randomSeed();
}

/** Seed of case `index`: distinct per case, reproducible from the base seed. */
export function caseSeed(base: bigint, index: number): bigint {
  return (base + BigInt(index + 1) * 0x9e3779b97f4a7c15n) & 0xffffffffffffffffn;
}
