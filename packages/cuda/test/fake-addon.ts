// A simulated addon for testing the TS layer on machines without a GPU: device memory is host
// memory, streams and events are counters. It checks what the real addon checks (live ranges,
// handles), so the TS layer's pointer arithmetic and argument order are exercised for real. It says
// nothing about CUDA itself: the GPU suites cover that.
import type { NativeBinding } from '../src/binding.js';
import type { MemoryStats } from '../src/memory-stats.js';

function fail(code: string, message: string): never {
  throw Object.assign(new Error(message), { code });
}

export interface FakeAddon extends NativeBinding {
  /** Live buffers by base address. */
  readonly blocks: Map<bigint, Uint8Array>;
  /** Instantiated graphs by id: their device and how often they were launched. */
  readonly graphs: Map<bigint, { device: number; launches: number; nodes: number }>;
  /** The capture underway (device), or null. */
  capturing(): number | null;
  /** Makes the next graphEnd fail as CUDA does for an invalidated capture. */
  failNextGraphEnd(): void;
}

export function makeFakeAddon(deviceCount = 1): FakeAddon {
  const blocks = new Map<bigint, Uint8Array>();
  let next = 0x7f0000000000n;
  let handles = 0x1000n;
  const streams = new Map<bigint, number>();
  const defaults: bigint[] = [];
  const current: bigint[] = [];
  for (let d = 0; d < deviceCount; d++) {
    const h = handles++;
    streams.set(h, d);
    defaults.push(h);
    current.push(h);
  }
  const events = new Map<bigint, { device: number; timing: boolean; recorded: boolean }>();
  const stats = { allocRequests: 0, freeRequests: 0 };
  const graphs = new Map<bigint, { device: number; launches: number; nodes: number }>();
  let nodes = 0; // device operations recorded by the capture underway
  let capture: number | null = null;
  let failEnd = false;

  const checkDevice = (d: number) => {
    if (!Number.isInteger(d) || d < 0 || d >= deviceCount)
      fail('ATTN_DEVICE_INDEX', `device index ${d} is out of range`);
  };
  const range = (ptr: bigint, bytes: number): Uint8Array => {
    for (const [base, mem] of blocks) {
      if (ptr >= base && ptr + BigInt(bytes) <= base + BigInt(mem.length))
        return mem.subarray(Number(ptr - base), Number(ptr - base) + bytes);
    }
    return fail('ATTN_OUT_OF_BOUNDS', `[0x${ptr.toString(16)}, +${bytes}) is not inside a live buffer`);
  };
  const stream = (h: bigint) => streams.get(h) ?? fail('ATTN_BAD_HANDLE', 'unknown or already destroyed stream handle');
  const event = (h: bigint) => events.get(h) ?? fail('ATTN_BAD_HANDLE', 'unknown or already destroyed event handle');
  const memoryStats = (): MemoryStats => {
    let allocated = 0;
    for (const m of blocks.values()) allocated += m.length;
    return {
      allocatedBytes: allocated,
      requestedBytes: allocated,
      reservedBytes: allocated,
      peakAllocatedBytes: allocated,
      peakReservedBytes: allocated,
      activeBlocks: blocks.size,
      cachedBlocks: 0,
      pendingFreeBlocks: 0,
      allocRequests: stats.allocRequests,
      freeRequests: stats.freeRequests,
      cacheHits: 0,
      deviceMallocs: stats.allocRequests,
      deviceFrees: stats.freeRequests,
      cacheFlushes: 0,
      ooms: 0,
      pinnedHostBytes: 0,
    };
  };

  return {
    blocks,
    graphs,
    capturing: () => capture,
    failNextGraphEnd: () => {
      failEnd = true;
    },
    probe: () => ({ count: deviceCount, platform: 'CUDA' }),
    deviceProperties: (d) => {
      checkDevice(d);
      return {
        index: d,
        name: 'Simulated',
        arch: 'sm_90',
        major: 9,
        minor: 0,
        multiProcessorCount: 132,
        totalMemoryBytes: 2 ** 36,
        l2CacheBytes: 50 << 20,
        sharedMemoryPerBlock: 49152,
        sharedMemoryPerBlockOptin: 232448,
        warpSize: 32,
        maxThreadsPerBlock: 1024,
        pciBusId: '0000:00:00.0',
      };
    },
    driverVersion: () => 13000,
    runtimeVersion: () => 13000,
    buildInfo: () => ({
      platform: 'CUDA',
      archs: '90a',
      compiler: 'simulated',
      compilerVersion: '0',
      buildType: 'Release',
      flags: '',
      runtimeHeadersVersion: 13000,
      napiVersion: 8,
    }),
    allocate: (d, bytes) => {
      checkDevice(d);
      if (bytes === 0) return 0n;
      stats.allocRequests++;
      const base = next;
      next += BigInt(Math.ceil(bytes / 512) * 512 + 512);
      blocks.set(base, new Uint8Array(bytes).fill(0xcd));
      return base;
    },
    free: (d, ptr) => {
      checkDevice(d);
      if (!blocks.delete(ptr)) fail('ATTN_BAD_POINTER', `free: 0x${ptr.toString(16)} is not a live block`);
      stats.freeRequests++;
    },
    // No C table: a simulated runtime serves no kernel addon.
    allocatorApi: () => 0n,
    recordStream: (_d, ptr, s) => {
      stream(s);
      if (!blocks.has(ptr)) fail('ATTN_BAD_POINTER', 'recordStream: not a live block');
    },
    memoryStats: (d) => (checkDevice(d), memoryStats()),
    resetPeakMemoryStats: (d) => checkDevice(d),
    emptyCache: () => {},
    copyHostToDevice: (d, dst, src) => (checkDevice(d), range(dst, src.length).set(src)),
    copyDeviceToHost: (d, dst, src) => {
      checkDevice(d);
      if (capture !== null) fail('ATTN_GRAPH_CAPTURE_UNSUPPORTED', 'a synchronizing read during capture');
      dst.set(range(src, dst.length));
    },
    copyDeviceToHostAsync: async (d, dst, src) => {
      checkDevice(d);
      const bytes = range(src, dst.length).slice();
      await new Promise((r) => setImmediate(r));
      dst.set(bytes);
    },
    copyDeviceToDevice: (dd, dst, sd, src, bytes) => {
      checkDevice(dd);
      checkDevice(sd);
      range(dst, bytes).set(range(src, bytes).slice());
      if (capture !== null) nodes++;
    },
    fill: (d, dst, value, bytes) => {
      checkDevice(d);
      range(dst, bytes).fill(value);
      if (capture !== null) nodes++;
    },
    synchronize: (d) => checkDevice(d),
    streamCreate: (d) => {
      checkDevice(d);
      const h = handles++;
      streams.set(h, d);
      return h;
    },
    streamDestroy: (h) => {
      const d = stream(h);
      if (defaults.includes(h)) fail('ATTN_BAD_HANDLE', 'a default stream cannot be destroyed');
      streams.delete(h);
      if (current[d] === h) current[d] = defaults[d]!;
    },
    streamSynchronize: (h) => void stream(h),
    streamQuery: (h) => (stream(h), true),
    streamDevice: (h) => stream(h),
    currentStream: (d) => (checkDevice(d), current[d]!),
    defaultStream: (d) => (checkDevice(d), defaults[d]!),
    setCurrentStream: (d, h) => {
      checkDevice(d);
      if (h === 0n) current[d] = defaults[d]!;
      else if (stream(h) !== d) fail('ATTN_DEVICE_MISMATCH', 'stream of another device');
      else current[d] = h;
    },
    eventCreate: (d, timing) => {
      checkDevice(d);
      const h = handles++;
      events.set(h, { device: d, timing, recorded: false });
      return h;
    },
    eventDestroy: (h) => {
      event(h);
      events.delete(h);
    },
    eventRecord: (h, s) => {
      const e = event(h);
      if (stream(s) !== e.device) fail('ATTN_DEVICE_MISMATCH', 'event and stream devices differ');
      e.recorded = true;
    },
    eventSynchronize: (h) => void event(h),
    eventQuery: (h) => (event(h), true),
    eventElapsedMs: (a, b) => {
      const [ea, eb] = [event(a), event(b)];
      if (!ea.timing || !eb.timing) fail('ATTN_EVENT_NO_TIMING', 'timing disabled');
      if (!ea.recorded || !eb.recorded) fail('ATTN_EVENT_NOT_RECORDED', 'not recorded');
      return 0.5;
    },
    streamWaitEvent: (s, h) => {
      stream(s);
      if (!event(h).recorded) fail('ATTN_EVENT_NOT_RECORDED', 'not recorded');
    },
    graphBegin: (d) => {
      checkDevice(d);
      if (capture !== null) fail('ATTN_GRAPH_NESTED', 'a capture is already underway');
      capture = d;
      nodes = 0;
    },
    graphEnd: (d) => {
      if (capture !== d) fail('ATTN_BAD_HANDLE', `device ${d} is not capturing`);
      capture = null;
      if (failEnd) {
        failEnd = false;
        throw Object.assign(new Error('operation not permitted when stream is capturing'), {
          code: 'ATTN_GPU_ERROR',
          gpuError: 'cudaErrorStreamCaptureInvalidated',
          gpuErrorNumber: 901,
        });
      }
      const id = handles++;
      graphs.set(id, { device: d, launches: 0, nodes });
      return id;
    },
    graphAbort: (d) => {
      if (capture === d) capture = null;
    },
    graphLaunch: (id, s) => {
      const g = graphs.get(id) ?? fail('ATTN_BAD_HANDLE', 'unknown or already destroyed graph handle');
      if (stream(s) !== g.device) fail('ATTN_GRAPH_DEVICE', 'a stream of another device');
      g.launches++;
    },
    graphDestroy: (id) => {
      if (!graphs.delete(id)) fail('ATTN_BAD_HANDLE', 'unknown or already destroyed graph handle');
    },
    graphNodeCount: (id) =>
      (graphs.get(id) ?? fail('ATTN_BAD_HANDLE', 'unknown or already destroyed graph handle')).nodes,
    philoxRaw: () => fail('ATTN_NATIVE_ERROR', 'not simulated'),
    philoxRawHost: () => fail('ATTN_NATIVE_ERROR', 'not simulated'),
    dropoutWords: () => fail('ATTN_NATIVE_ERROR', 'not simulated'),
  };
}
