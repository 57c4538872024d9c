// Which AMD GPUs each AOTriton release has kernels for, and which of those it calls experimental
// (isArchExperimentallySupported) or tech preview (isArchTechPreview, 0.13+). From the published
// lists (../shared/reference/rocm-backends.md §1.5). PyTorch gates experimental archs behind
// TORCH_ROCM_AOTRITON_ENABLE_EXPERIMENTAL; attn mirrors it as ATTN_ROCM_AOTRITON_ENABLE_EXPERIMENTAL.
import { compareVersions, type AotritonVersion } from './version.js';

export const ENABLE_EXPERIMENTAL_ENV = 'ATTN_ROCM_AOTRITON_ENABLE_EXPERIMENTAL';

export type ArchStatus = 'supported' | 'experimental' | 'tech-preview' | 'unsupported';

interface ArchRow {
  readonly from: AotritonVersion;
  readonly known: readonly string[];
  readonly experimental: readonly string[];
  readonly techPreview: readonly string[];
}

const BASE = ['gfx90a', 'gfx942', 'gfx950', 'gfx1100', 'gfx1101', 'gfx1102', 'gfx1150', 'gfx1151', 'gfx1200', 'gfx1201', 'gfx1250'];
const V0112 = [...BASE, 'gfx1103', 'gfx1152', 'gfx1153'];

// Newest first; the first row whose `from` is <= the version applies.
const ROWS: readonly ArchRow[] = [
  {
    from: { major: 0, minor: 13, patch: 0 },
    known: V0112,
    experimental: ['gfx1101', 'gfx1102', 'gfx1103', 'gfx1150', 'gfx1152', 'gfx1153', 'gfx1200'],
    techPreview: ['gfx1250'],
  },
  {
    from: { major: 0, minor: 12, patch: 0 },
    known: V0112,
    experimental: ['gfx1101', 'gfx1102', 'gfx1103', 'gfx1150', 'gfx1152', 'gfx1153', 'gfx1200', 'gfx1250'],
    techPreview: [],
  },
  {
    from: { major: 0, minor: 11, patch: 2 },
    known: V0112,
    experimental: ['gfx1101', 'gfx1102', 'gfx1103', 'gfx1150', 'gfx1151', 'gfx1152', 'gfx1153', 'gfx1200', 'gfx1250'],
    techPreview: [],
  },
  {
    from: { major: 0, minor: 11, patch: 1 },
    known: [...BASE, 'gfx1103'],
    experimental: ['gfx1101', 'gfx1102', 'gfx1103', 'gfx1150', 'gfx1151', 'gfx1200', 'gfx1250'],
    techPreview: [],
  },
  {
    from: { major: 0, minor: 11, patch: 0 },
    known: BASE,
    experimental: ['gfx1100', 'gfx1101', 'gfx1102', 'gfx1150', 'gfx1151', 'gfx1200', 'gfx1250'],
    techPreview: [],
  },
];

function rowFor(v: AotritonVersion): ArchRow | null {
  return ROWS.find((r) => compareVersions(v, r.from) >= 0) ?? null;
}

/** The gfx target without feature suffixes: 'gfx942:sramecc+:xnack-' -> 'gfx942'. */
export function baseArch(arch: string): string {
  return arch.split(':')[0] ?? arch;
}

export function archStatus(v: AotritonVersion, arch: string): ArchStatus {
  const row = rowFor(v);
  const a = baseArch(arch);
  if (!row || !row.known.includes(a)) return 'unsupported';
  if (row.techPreview.includes(a)) return 'tech-preview';
  if (row.experimental.includes(a)) return 'experimental';
  return 'supported';
}

/** Archs AOTriton `v` runs without the experimental switch. */
export function stableArchs(v: AotritonVersion): string[] {
  const row = rowFor(v);
  return row ? row.known.filter((a) => !row.experimental.includes(a)) : [];
}
