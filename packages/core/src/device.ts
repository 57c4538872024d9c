// Where a tensor lives. 'cpu' is always present; 'cuda' and 'rocm' come from device packages.

export type DeviceType = 'cpu' | 'cuda' | 'rocm';

export interface Device {
  readonly type: DeviceType;
  readonly index: number;
}

/** 'cpu', 'cuda', 'cuda:1', or a Device. */
export type DeviceLike = DeviceType | `${DeviceType}:${number}` | Device;

/** What a device runtime reports of one of its devices; rules read it (e.g. smRange). */
export interface DeviceProperties {
  readonly type: DeviceType;
  readonly index: number;
  readonly name: string;
  /** 'sm_90' on CUDA, 'gfx942' on ROCm, the CPU model on the CPU. */
  readonly arch: string;
  /** Compute capability on CUDA (9, 0); 0, 0 elsewhere. */
  readonly major: number;
  readonly minor: number;
  readonly multiProcessorCount: number;
  readonly totalMemoryBytes: number;
  /** Largest dynamic shared memory a block may opt into, in bytes (0 on the CPU). */
  readonly sharedMemoryPerBlockOptin: number;
  readonly l2CacheBytes: number;
}
