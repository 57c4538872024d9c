// Which AMD GPUs each AOTriton release has kernels for, and which of those it calls experimental
// (isArchExperimentallySupported) or tech preview (isArchTechPreview, 0.13+). Checked against each
// tag's v3src/util.cc (the gfx-name table getGpuFromStream knows, and the experimental list; an arch
// missing from the table is GPU_ARCH_UNKNOWN, so check_gpu fails): 0.10b, 0.11b, 0.11.1b, 0.11.2b,
// 0.12b, 0.12.1b, 0.13b (see README "Checked against"). Experimental archs run only after
// enableExperimentalAotritonArchs(true) (experimental.ts).
import { compareVersions, type AotritonVersion } from './version.js';

export type ArchStatus = 'supported' | 'experimental' | 'tech-preview' | 'unsupported';

interface ArchRow {
  readonly from: AotritonVersion;
  readonly known: readonly string[];
  readonly experimental: readonly string[];
  readonly techPreview: readonly string[];
}

// gfx1250 is in the experimental list from 0.10 but in the name table only from 0.12.1b: before
// that it is unknown to the library (unsupported), whatever the experimental switch says.
const V010 = ['gfx90a', 'gfx942', 'gfx950', 'gfx1100', 'gfx1101', 'gfx1201'];
const BASE = [...V010, 'gfx1102', 'gfx1150', 'gfx1151', 'gfx1200'];
const V0112 = [...BASE, 'gfx1103', 'gfx1152', 'gfx1153'];
const V01201 = [...V0112, 'gfx1250'];

// Newest first; the first row whose `from` is <= the version applies.
const ROWS: readonly ArchRow[] = [
  {
    from: { major: 0, minor: 13, patch: 0 },
    known: V01201,
    experimental: ['gfx1101', 'gfx1102', 'gfx1103', 'gfx1150', 'gfx1152', 'gfx1153', 'gfx1200'],
    techPreview: ['gfx1250'],
  },
  {
    from: { major: 0, minor: 12, patch: 1 },
    known: V01201,
    experimental: ['gfx1101', 'gfx1102', 'gfx1103', 'gfx1150', 'gfx1152', 'gfx1153', 'gfx1200', 'gfx1250'],
    techPreview: [],
  },
  {
    from: { major: 0, minor: 12, patch: 0 },
    known: V0112,
    experimental: ['gfx1101', 'gfx1102', 'gfx1103', 'gfx1150', 'gfx1152', 'gfx1153', 'gfx1200'],
    techPreview: [],
  },
  {
    from: { major: 0, minor: 11, patch: 2 },
    known: V0112,
    experimental: ['gfx1101', 'gfx1102', 'gfx1103', 'gfx1150', 'gfx1151', 'gfx1152', 'gfx1153', 'gfx1200'],
    techPreview: [],
  },
  {
    from: { major: 0, minor: 11, patch: 1 },
    known: [...BASE, 'gfx1103'],
    experimental: ['gfx1101', 'gfx1102', 'gfx1103', 'gfx1150', 'gfx1151', 'gfx1200'],
    techPreview: [],
  },
  {
    from: { major: 0, minor: 11, patch: 0 },
    known: BASE,
    experimental: ['gfx1100', 'gfx1101', 'gfx1102', 'gfx1150', 'gfx1151', 'gfx1200'],
    techPreview: [],
  },
  {
    from: { major: 0, minor: 10, patch: 0 },
    known: V010,
    experimental: ['gfx1101'],
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
