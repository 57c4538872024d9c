// Fresh random inputs each run, reproducible from the printed seed (a failing assertion names it).
export interface Rng {
  readonly seed: number;
  /** A uint32. */
  u32(): number;
  /** An integer in [0, n). */
  int(n: number): number;
}

export function makeRng(seed = (Date.now() ^ (Math.random() * 0x100000000)) >>> 0): Rng {
  let s = seed >>> 0 || 1;
  const u32 = () => {
    // xorshift32: enough to spread test inputs; the values under test come from Philox itself.
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s;
  };
  return { seed, u32, int: (n) => u32() % n };
}
