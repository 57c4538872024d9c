// The fixture of the suites that validate calls while a device captures a graph (validate-capture,
// validate-index-values): before each test an isolated registry with a fake CUDA runtime whose
// capturing() the test switches, and an empty call cache. Test support only (imports vitest).
import { afterEach, beforeEach } from 'vitest';
import { clearCallCache } from './call-cache.js';
import { registerDeviceRuntime } from './device-registry.js';
import { type FakeDeviceRuntime, makeFakeDeviceRuntime } from './fake-device.js';
import { isolateRegistry } from './testing.js';

export interface CapturingDevice {
  /** The fake runtime's counters (device-to-host reads and the rest) of the current test. */
  readonly counts: FakeDeviceRuntime['counts'];
  /** What the runtime's capturing() answers; false at the start of each test. */
  capturing: boolean;
}

export function useCapturingDevice(): CapturingDevice {
  let runtime: FakeDeviceRuntime | null = null;
  let capturing = false;
  let restore: (() => void) | null = null;
  beforeEach(() => {
    runtime = makeFakeDeviceRuntime();
    restore = isolateRegistry({ keepDeviceRuntimes: false });
    clearCallCache();
    registerDeviceRuntime({ ...runtime, capturing: () => capturing });
    capturing = false;
  });
  afterEach(() => restore?.());
  return {
    get counts() {
      if (!runtime) throw new Error('useCapturingDevice: counts read outside a test');
      return runtime.counts;
    },
    get capturing() {
      return capturing;
    },
    set capturing(on: boolean) {
      capturing = on;
    },
  };
}
