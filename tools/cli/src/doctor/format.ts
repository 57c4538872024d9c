// `attn doctor` for a person: aligned sections.
import { formatBytes } from '../format.js';
import type { DoctorReport, RuntimeReport } from './collect.js';

type Facts = Readonly<Record<string, string | number | boolean | readonly string[]>>;

function row(label: string, text: string, width = 22): string {
  return `  ${label.padEnd(width)} ${text}`;
}

function facts(f: Facts): string {
  return Object.entries(f)
    .map(([k, v]) => `${k}=${Array.isArray(v) ? v.join(';') : String(v)}`)
    .join(', ');
}

/** The allocator counters a person looks at first; --json has them all. */
function memoryLine(m: Facts): string {
  const keys = ['allocatedBytes', 'reservedBytes', 'peakReservedBytes'] as const;
  const shown = keys
    .filter((k) => typeof m[k] === 'number')
    .map((k) => `${k.replace('Bytes', '')} ${formatBytes(m[k] as number)}`);
  return shown.length ? shown.join(', ') : facts(m);
}

/** The line already says 'unavailable'; a reason that repeats it is trimmed. */
function why(reason: string | undefined): string {
  return (reason ?? 'no reason given').replace(/^unavailable:\s*/, '');
}

/** Build facts, less any that only repeat the reason already printed. */
function buildFacts(f: Facts, reason: string | undefined): Facts {
  return Object.fromEntries(
    Object.entries(f).filter(([, v]) => !(reason && typeof v === 'string' && why(v) === why(reason))),
  );
}

function runtimeLines(r: RuntimeReport): string[] {
  if (r.state !== 'ok') {
    const lines = [row(r.type, `${r.state}${r.reason ? `: ${why(r.reason)}` : ''} (${r.package})`)];
    if (r.versions) lines.push(row('', `build: ${facts(buildFacts(r.versions, r.reason))}`));
    return lines;
  }
  const lines = [
    row(r.type, `${r.devices.length} device(s) (${r.package})${r.versions ? `; ${facts(r.versions)}` : ''}`),
  ];
  for (const d of r.devices) {
    const cc = d.type === 'cuda' ? `, compute ${d.major}.${d.minor}` : '';
    lines.push(
      row(
        `${d.type}:${d.index}`,
        `${d.name}, ${d.arch}${cc}, ${d.multiProcessorCount} SMs/CUs, ${formatBytes(d.totalMemoryBytes)}, L2 ${formatBytes(d.l2CacheBytes)}, smem/block ${formatBytes(d.sharedMemoryPerBlockOptin)}`,
      ),
    );
    if (d.memory) lines.push(row('', `memory: ${memoryLine(d.memory)}`));
  }
  return lines;
}

export function formatDoctor(r: DoctorReport): string {
  const { cpu } = r.host;
  const lines = [
    'Host',
    row('Node', `${r.host.node} (N-API ${r.host.napi}), ${r.host.platform}`),
    row('CPU', `${cpu.model}, ${cpu.threads} threads, ${cpu.arch}`),
    row('SIMD', cpu.simd.length ? cpu.simd.join(' ') : '(none of the known flags)'),
    row('Last-level cache', cpu.lastLevelCacheBytes === null ? 'unknown' : formatBytes(cpu.lastLevelCacheBytes)),
    '',
    'Devices',
    ...r.runtimes.flatMap(runtimeLines),
    ...(r.nccl ? [row('nccl', `${r.nccl.state}: ${r.nccl.summary}`)] : []),
    '',
    'Packages',
    ...r.packages.map((p) =>
      row(p.name, `${p.state}${p.version ? ` ${p.version}` : ''}${p.error ? `: ${p.error}` : ''}  [${p.kind}]`),
    ),
    '',
    'Backends',
  ];
  if (r.backends.length === 0) lines.push(row('(none)', 'no backend registered: install @attn/cpu or a GPU backend'));
  for (const b of r.backends) {
    const state = b.available ? 'available' : `unavailable: ${why(b.reason)}`;
    lines.push(row(b.name, `${b.device}, priority ${b.priority}, ${state}`));
    if (b.buildInfo) lines.push(row('', `build: ${facts(buildFacts(b.buildInfo, b.reason))}`));
    for (const k of b.kernels) lines.push(row('', `kernel ${k.name}: ${k.description}`));
  }
  return lines.join('\n');
}
