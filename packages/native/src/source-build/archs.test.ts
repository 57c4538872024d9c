import { describe, expect, it } from 'vitest';
import { DEFAULT_CUDA_ARCHS, RELEASE_CUDA_ARCHS, cudaArchs } from './archs.js';
import { dirVariable } from './dependencies.js';

describe('cudaArchs', () => {
  it('takes the option, then ATTN_CUDA_ARCHS, then the default', () => {
    expect(cudaArchs(undefined, {})).toBe(DEFAULT_CUDA_ARCHS);
    expect(cudaArchs(undefined, { ATTN_CUDA_ARCHS: '90a' })).toBe('90a');
    expect(cudaArchs('80,86', { ATTN_CUDA_ARCHS: '90a' })).toBe('80;86');
    expect(cudaArchs('release', {})).toBe(RELEASE_CUDA_ARCHS);
  });

  it('carries SASS for sm80/86/89/90a and PTX for compute_90 in release builds', () => {
    expect(RELEASE_CUDA_ARCHS.split(';')).toEqual(['80-real', '86-real', '89-real', '90a-real', '90-virtual']);
  });

  it('refuses what is not an arch', () => {
    expect(() => cudaArchs('sm_90', {})).toThrow(/'sm_90' is not a CUDA arch/);
    expect(() => cudaArchs(';', {})).toThrow(/empty/);
  });
});

describe('dirVariable', () => {
  it('names the CMake variable of a dependency folder', () => {
    expect(dirVariable('@attn/native')).toBe('ATTN_DIR_NATIVE');
    expect(dirVariable('@attn/rocm-aotriton')).toBe('ATTN_DIR_ROCM_AOTRITON');
  });
});
