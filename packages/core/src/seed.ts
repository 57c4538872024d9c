// 64-bit seeds for Philox: validation of user seeds and fresh random ones.
import { randomBytes } from 'node:crypto';
import { describeValue } from './describe-value.js';
import { AttnInputError } from './errors.js';

const TWO_64 = 1n << 64n;

/** A fresh random 64-bit seed from the OS generator. */
export function randomSeed(): bigint {
  return randomBytes(8).readBigUInt64LE(0);
}

/** A seed in [0, 2^64) from a bigint or a safe non-negative integer number. */
export function toSeed(seed: bigint | number, what = 'seed', code = 'ATTN_SEED'): bigint {
  if (typeof seed === 'number') {
    if (!Number.isSafeInteger(seed) || seed < 0) {
      throw new AttnInputError(
        code,
        `${what} must be a non-negative safe integer or a bigint in [0, 2^64), got ${seed}.`,
      );
    }
    return BigInt(seed);
  }
  if (typeof seed !== 'bigint' || seed < 0n || seed >= TWO_64) {
    throw new AttnInputError(
      code,
      `${what} must be a bigint in [0, 2^64) or a non-negative safe integer, got ${describeValue(seed)}.`,
    );
  }
  return seed;
}
