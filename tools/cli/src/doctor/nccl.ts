// `attn doctor`'s NCCL line: which NCCL @attn/context-parallel finds (build and run time), or why none.
// The finder lives in that package (optional here): without it, doctor says it is not installed.
import { isMissingPackage } from '../runtime/packages.js';

export interface NcclSection {
  readonly state: 'found' | 'none' | 'not installed' | 'failed';
  readonly summary: string;
  /** findNccl's full answer (--json). */
  readonly detail?: unknown;
}

const PACKAGE = '@attn/context-parallel';

export async function ncclSection(
  importer: (name: string) => Promise<unknown> = (n) => import(n),
): Promise<NcclSection> {
  try {
    const mod = (await importer(PACKAGE)) as { findNccl?: () => { runtime: unknown; build: unknown; summary: string } };
    if (typeof mod.findNccl !== 'function') return { state: 'failed', summary: `${PACKAGE} has no findNccl export` };
    const r = mod.findNccl();
    return { state: r.runtime || r.build ? 'found' : 'none', summary: r.summary, detail: r };
  } catch (err) {
    if (isMissingPackage(err, PACKAGE))
      return { state: 'not installed', summary: `install ${PACKAGE} to look for NCCL` };
    return { state: 'failed', summary: err instanceof Error ? err.message : String(err) };
  }
}
