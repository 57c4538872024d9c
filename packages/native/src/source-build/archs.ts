// GPU arch lists. The default builds what the monorepo tests and benchmarks run on; the release list
// is what the prebuilt packages carry: machine code (SASS) for each datacenter and workstation arch
// from Ampere to Hopper, plus PTX for compute_90 so that newer GPUs JIT it (the sm_90a kernels use
// wgmma and cannot be PTX for other archs; the code picks them only on sm_90 itself).

export const DEFAULT_CUDA_ARCHS = '80;90a';
export const RELEASE_CUDA_ARCHS = '80-real;86-real;89-real;90a-real;90-virtual';

/** `--archs` value (a list, or 'default' / 'release'), else $ATTN_CUDA_ARCHS, else the default. */
export function cudaArchs(option: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  const value = option ?? env.ATTN_CUDA_ARCHS ?? 'default';
  if (value === 'default') return DEFAULT_CUDA_ARCHS;
  if (value === 'release') return RELEASE_CUDA_ARCHS;
  const list = value
    .replaceAll(',', ';')
    .split(';')
    .map((a) => a.trim())
    .filter(Boolean);
  for (const a of list) {
    if (!/^\d{2,3}[af]?(-real|-virtual)?$/.test(a))
      throw new Error(`'${a}' is not a CUDA arch (e.g. 80, 90a, 90-virtual)`);
  }
  if (list.length === 0) throw new Error('the CUDA arch list is empty');
  return list.join(';');
}
