// The two steps of rounding a double once, exactly, to a binary format with fewer bits (half.ts, float8.ts):
// its binary exponent, and the scaled value rounded to an integer, ties to even. Internal to core.

/** x rounded to the nearest integer, ties to even (x >= 0, below 2^53: the fraction is exact). */
export function roundHalfEven(x: number): number {
  const floor = Math.floor(x);
  const frac = x - floor; // exact: x < 2^53 where this is used
  if (frac > 0.5) return floor + 1;
  if (frac < 0.5) return floor;
  return floor % 2 === 0 ? floor : floor + 1;
}

/** floor(log2(a)) for finite a > 0, exact (Math.log2 alone can be off by one near powers of two). */
export function exponentOf(a: number): number {
  let e = Math.floor(Math.log2(a));
  if (2 ** e > a) e -= 1;
  else if (2 ** (e + 1) <= a) e += 1;
  return e;
}
