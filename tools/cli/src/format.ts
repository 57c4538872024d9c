// Human-readable numbers: times, rates, bytes, errors.

function sig(x: number, digits = 3): string {
  if (x === 0) return '0';
  const mag = Math.floor(Math.log10(Math.abs(x)));
  const decimals = Math.max(0, digits - 1 - mag);
  return x.toFixed(Math.min(decimals, 6));
}

/** 0.0123 ms -> "12.3 us"; 1530 ms -> "1.53 s". */
export function formatTime(ms: number): string {
  if (!Number.isFinite(ms)) return String(ms);
  if (ms < 1) return `${sig(ms * 1000)} us`;
  if (ms < 1000) return `${sig(ms)} ms`;
  return `${sig(ms / 1000)} s`;
}

/** FLOP/s -> "312 GFLOP/s" below 1 TFLOP/s, "1.23 TFLOP/s" above. */
export function formatRate(flopsPerSecond: number): string {
  if (!Number.isFinite(flopsPerSecond)) return String(flopsPerSecond);
  const t = flopsPerSecond / 1e12;
  if (t >= 1) return `${sig(t)} TFLOP/s`;
  return `${sig(flopsPerSecond / 1e9)} GFLOP/s`;
}

export function formatBytes(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = bytes;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${sig(v)} ${units[u]}`;
}

/** Errors in scientific notation: 1.2e-4. */
export function formatError(x: number): string {
  if (!Number.isFinite(x)) return String(x);
  if (x === 0) return '0';
  return x.toExponential(2);
}

/** ours / theirs as "1.23x". */
export function formatRatio(ratio: number): string {
  return Number.isFinite(ratio) ? `${ratio.toFixed(2)}x` : 'n/a';
}
