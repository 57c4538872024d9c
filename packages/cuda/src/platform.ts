// What differs between the two builds of the runtime sources: the device type core knows them by,
// the words messages use, how the runtime encodes versions, and the hint after a failed probe.
// Everything else (the addon's surface, the TS layer over it) is one code path for both.
import { existsSync } from 'node:fs';
import { AttnInputError } from '@attn/core';

export type GpuType = 'cuda' | 'rocm';

export interface GpuPlatform {
  readonly type: GpuType;
  /** How messages name the platform: 'CUDA' or 'ROCm'. */
  readonly name: string;
  /** The package that registers this runtime with core, for messages. */
  readonly packageName: string;
  /** A runtime or driver version as the runtime encodes it, in words ('13.0', '5.2.21153'). */
  formatVersion(version: number): string;
  /** Words to append when the probe failed with `errorName`: what to do about it, or ''. */
  probeHint(errorName: string, driverVersion: number, runtimeVersion: number): string;
}

/** 13000 -> '13.0', 12040 -> '12.4' (CUDA's version encoding: 1000 * major + 10 * minor). */
export function formatCudaVersion(v: number): string {
  return `${Math.floor(v / 1000)}.${Math.floor((v % 1000) / 10)}`;
}

/** 50221153 -> '5.2.21153' (HIP_VERSION's encoding: 10^7 * major + 10^5 * minor + patch). */
export function formatHipVersion(v: number): string {
  return `${Math.floor(v / 10_000_000)}.${Math.floor((v % 10_000_000) / 100_000)}.${v % 100_000}`;
}

function cudaProbeHint(errorName: string, driverVersion: number, runtimeVersion: number): string {
  if (errorName !== 'cudaErrorInsufficientDriver') return '';
  // cudart is linked statically, so the only version that can be too old is the driver's.
  return driverVersion === 0
    ? '; no NVIDIA driver is installed'
    : `; the driver supports CUDA ${formatCudaVersion(driverVersion)} but this addon's runtime is CUDA ${formatCudaVersion(runtimeVersion)}: update the driver`;
}

/**
 * HIP says hipErrorNoDevice both when the kernel driver is absent and when the GPUs are hidden or
 * not accessible; /dev/kfd (the amdgpu compute interface) tells the two apart. `kfdExists` is
 * injectable for tests.
 */
export function hipProbeHint(errorName: string, kfdExists: () => boolean = () => existsSync('/dev/kfd')): string {
  if (errorName !== 'hipErrorNoDevice') return '';
  return kfdExists()
    ? '; /dev/kfd exists: check that this user may open /dev/kfd and /dev/dri (video and render groups) and that HIP_VISIBLE_DEVICES does not hide the GPUs'
    : '; /dev/kfd is missing: the amdgpu kernel driver is not loaded here';
}

const PLATFORMS: Readonly<Record<GpuType, GpuPlatform>> = {
  cuda: {
    type: 'cuda',
    name: 'CUDA',
    packageName: '@attn/cuda',
    formatVersion: formatCudaVersion,
    probeHint: cudaProbeHint,
  },
  rocm: {
    type: 'rocm',
    name: 'ROCm',
    packageName: '@attn/rocm',
    formatVersion: formatHipVersion,
    probeHint: (e) => hipProbeHint(e),
  },
};

export function gpuPlatform(type: GpuType): GpuPlatform {
  const p = (PLATFORMS as Partial<Record<string, GpuPlatform>>)[type];
  if (!p)
    throw new AttnInputError('ATTN_RUNTIME', `Unknown GPU runtime type ${JSON.stringify(type)}: use 'cuda' or 'rocm'.`);
  return p;
}
