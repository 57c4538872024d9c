// A DeviceRuntime backed by host memory, for tests that exercise device paths (uploads, strided
// read-back, device-side copies, properties for rules) on machines without a GPU.
import type { DeviceProperties, DeviceType } from './device.js';
import { DisposedError, OutOfMemoryError } from './errors.js';
import type { DeviceRuntime, DeviceStorage } from './storage.js';

export interface FakeDeviceOptions {
  type?: Exclude<DeviceType, 'cpu'>;
  /** One entry per device; default one sm_90 device. */
  devices?: ReadonlyArray<Partial<DeviceProperties>>;
  /** Reason to report from availability(); default available. */
  unavailable?: string;
  /** Allocations above this many bytes fail with OutOfMemoryError. */
  maxAllocationBytes?: number;
}

export interface FakeDeviceRuntime extends DeviceRuntime {
  /** Live allocations (not yet disposed). */
  readonly live: () => number;
  /** Count of calls per method, to check that paths copy what they should. */
  readonly counts: Record<'allocate' | 'h2d' | 'd2h' | 'd2d' | 'fill', number>;
}

class FakeStorage implements DeviceStorage {
  readonly kind = 'device';
  #disposed = false;
  constructor(
    readonly device: { readonly type: Exclude<DeviceType, 'cpu'>; readonly index: number },
    readonly bytes: number,
    readonly memory: Uint8Array,
    readonly address: bigint,
    private readonly onDispose: () => void,
  ) {}
  get pointer(): bigint {
    if (this.#disposed) throw new DisposedError('device storage');
    return this.address;
  }
  get disposed(): boolean {
    return this.#disposed;
  }
  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    this.onDispose();
  }
}

function asFake(s: DeviceStorage): FakeStorage {
  if (!(s instanceof FakeStorage)) throw new Error('fake device runtime: storage from another runtime');
  if (s.disposed) throw new DisposedError('device storage');
  return s;
}

function checkRange(s: FakeStorage, offset: number, bytes: number): void {
  if (offset < 0 || offset + bytes > s.bytes) {
    throw new RangeError(`fake device: bytes [${offset}, ${offset + bytes}) outside a ${s.bytes}-byte buffer`);
  }
}

export function makeFakeDeviceRuntime(opts: FakeDeviceOptions = {}): FakeDeviceRuntime {
  const type = opts.type ?? 'cuda';
  const devices = (opts.devices ?? [{}]).map((d, index): DeviceProperties => ({
    type,
    index,
    name: 'fake device',
    arch: type === 'cuda' ? 'sm_90' : 'gfx942',
    major: type === 'cuda' ? 9 : 0,
    minor: 0,
    multiProcessorCount: 132,
    totalMemoryBytes: 2 ** 34,
    sharedMemoryPerBlockOptin: 232448,
    l2CacheBytes: 2 ** 25,
    ...d,
  }));
  let live = 0;
  let nextAddress = 0x7f0000000000n;
  const counts = { allocate: 0, h2d: 0, d2h: 0, d2d: 0, fill: 0 };
  return {
    type,
    counts,
    live: () => live,
    availability: () => (opts.unavailable ? { ok: false, reason: opts.unavailable } : { ok: true }),
    deviceCount: () => devices.length,
    properties: (index) => {
      const p = devices[index];
      if (!p) throw new RangeError(`fake device: no device ${index}`);
      return p;
    },
    allocate: (bytes, index) => {
      counts.allocate++;
      if (opts.maxAllocationBytes !== undefined && bytes > opts.maxAllocationBytes) {
        throw new OutOfMemoryError(`fake device: cannot allocate ${bytes} bytes`, bytes);
      }
      live++;
      const address = nextAddress;
      nextAddress += BigInt(Math.ceil(Math.max(bytes, 1) / 256) * 256);
      return new FakeStorage({ type, index }, bytes, new Uint8Array(bytes), address, () => live--);
    },
    copyHostToDevice: (dst, off, src) => {
      counts.h2d++;
      const d = asFake(dst);
      checkRange(d, off, src.length);
      d.memory.set(src, off);
    },
    copyDeviceToHost: (src, off, dst) => {
      counts.d2h++;
      const s = asFake(src);
      checkRange(s, off, dst.length);
      dst.set(s.memory.subarray(off, off + dst.length));
    },
    copyDeviceToDevice: (dst, dstOff, src, srcOff, bytes) => {
      counts.d2d++;
      const d = asFake(dst);
      const s = asFake(src);
      checkRange(d, dstOff, bytes);
      checkRange(s, srcOff, bytes);
      d.memory.set(s.memory.subarray(srcOff, srcOff + bytes), dstOff);
    },
    fill: (dst, off, bytes, value) => {
      counts.fill++;
      const d = asFake(dst);
      checkRange(d, off, bytes);
      d.memory.fill(value, off, off + bytes);
    },
    synchronize: () => {},
  };
}
