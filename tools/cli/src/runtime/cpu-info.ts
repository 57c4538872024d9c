// What the host CPU is: model, identity, threads, SIMD flags, last-level cache. Linux reads /proc and
// /sys; elsewhere os.cpus() gives the model and count.
import { readFileSync } from 'node:fs';
import os from 'node:os';

/** Flags that matter for attention kernels (x86 and Arm names as /proc/cpuinfo spells them). */
export const SIMD_FLAGS = [
  'sse4_2',
  'avx',
  'avx2',
  'fma',
  'f16c',
  'avx512f',
  'avx512bw',
  'avx512vl',
  'avx512_vnni',
  'avx512_bf16',
  'avx512_fp16',
  'avx_vnni',
  'amx_tile',
  'amx_bf16',
  'amx_fp16',
  'amx_int8',
  'asimd',
  'asimdhp',
  'asimddp',
  'fphp',
  'bf16',
  'i8mm',
  'sve',
  'sve2',
  'sme',
] as const;

export interface CpuInfo {
  readonly model: string;
  /**
   * The CPU's identity where the model name does not give it (a VM may show only "AMD EPYC" for Zen 3
   * and Zen 5 alike): "AuthenticAMD family 26 model 2 stepping 1" on x86, "implementer 0x41 part
   * 0xd0c" on Arm; null where /proc/cpuinfo has neither.
   */
  readonly id: string | null;
  readonly threads: number;
  readonly arch: string;
  readonly simd: readonly string[];
  readonly lastLevelCacheBytes: number | null;
}

/** The x86 (vendor, family, model, stepping) or Arm (implementer, part) fields that make up `id`. */
const ID_FIELDS: ReadonlyArray<readonly [key: string, label: string]> = [
  ['vendor_id', ''],
  ['cpu family', 'family'],
  ['model', 'model'],
  ['stepping', 'stepping'],
  ['cpu implementer', 'implementer'],
  ['cpu part', 'part'],
];

/** Model, identity and SIMD flags from the text of /proc/cpuinfo (first processor block). */
export function parseCpuinfo(text: string): { model: string | null; id: string | null; flags: string[] } {
  let model: string | null = null;
  let flags: string[] = [];
  const fields = new Map<string, string>();
  let blocks = 0;
  for (const line of text.split('\n')) {
    const m = /^([^:]+?)\s*:\s*(.*)$/.exec(line);
    if (!m) continue;
    const key = m[1]!.toLowerCase();
    const value = m[2]!.trim();
    if (key === 'processor') blocks++;
    // Arm kernels may write "Hardware" after every processor block; the rest is the first block's.
    if (model === null && (key === 'model name' || key === 'cpu model' || key === 'hardware')) model = value;
    if (blocks > 1) continue;
    if (flags.length === 0 && (key === 'flags' || key === 'features')) flags = value.split(/\s+/);
    if (ID_FIELDS.some(([k]) => k === key) && value !== '') fields.set(key, value);
  }
  const parts = ID_FIELDS.filter(([k]) => fields.has(k)).map(([k, label]) =>
    label ? `${label} ${fields.get(k)!}` : fields.get(k)!,
  );
  return { model, id: parts.length > 0 ? parts.join(' ') : null, flags };
}

/** "32768K" / "1024 KiB" / "36M" -> bytes. */
export function parseCacheSize(text: string): number | null {
  const m = /^\s*(\d+)\s*([KMG])?i?B?\s*$/i.exec(text);
  if (!m) return null;
  const unit = { K: 1024, M: 1024 ** 2, G: 1024 ** 3 }[(m[2] ?? '').toUpperCase() as 'K' | 'M' | 'G'] ?? 1;
  return Number(m[1]) * unit;
}

function readOr(path: string): string | null {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return null;
  }
}

function lastLevelCache(): number | null {
  let best: number | null = null;
  for (let i = 0; i < 8; i++) {
    const size = readOr(`/sys/devices/system/cpu/cpu0/cache/index${i}/size`);
    if (size === null) break;
    const bytes = parseCacheSize(size);
    if (bytes !== null && (best === null || bytes > best)) best = bytes;
  }
  return best;
}

export function cpuInfo(): CpuInfo {
  const parsed = parseCpuinfo(readOr('/proc/cpuinfo') ?? '');
  const flags = new Set(parsed.flags);
  return {
    model: parsed.model ?? os.cpus()[0]?.model ?? 'unknown',
    id: parsed.id,
    threads: os.availableParallelism(),
    arch: os.arch(),
    simd: SIMD_FLAGS.filter((f) => flags.has(f)),
    lastLevelCacheBytes: lastLevelCache(),
  };
}
