// What rules may read about the device a call runs on (RuleContext).
import { cpus, totalmem } from 'node:os';
import type { RuleContext } from './backend.js';
import type { Device, DeviceProperties } from './device.js';
import { getDeviceRuntime } from './device-registry.js';

let cpuProps: DeviceProperties | null = null;

function cpuProperties(): DeviceProperties {
  if (cpuProps) return cpuProps;
  const list = cpus();
  cpuProps = Object.freeze({
    type: 'cpu',
    index: 0,
    name: list[0]?.model.trim() || process.arch,
    arch: process.arch,
    major: 0,
    minor: 0,
    multiProcessorCount: list.length,
    totalMemoryBytes: totalmem(),
    sharedMemoryPerBlockOptin: 0,
    l2CacheBytes: 0,
  });
  return cpuProps;
}

/**
 * Properties of the device, or null when no runtime can say (not registered, unavailable, or it
 * failed): rules that need them then decline with a reason rather than guess.
 */
export function ruleContext(device: Device): RuleContext {
  if (device.type === 'cpu') return { device: cpuProperties() };
  const runtime = getDeviceRuntime(device.type);
  if (!runtime) return { device: null, deviceUnknownReason: `no '${device.type}' device runtime is registered` };
  try {
    const avail = runtime.availability();
    if (!avail.ok)
      return { device: null, deviceUnknownReason: `the '${device.type}' runtime is unavailable: ${avail.reason}` };
    if (device.index >= runtime.deviceCount()) {
      return { device: null, deviceUnknownReason: `${device.type}:${device.index} does not exist` };
    }
    return { device: runtime.properties(device.index) };
  } catch (e) {
    return {
      device: null,
      deviceUnknownReason: `the '${device.type}' runtime failed: ${e instanceof Error ? e.message : String(e)}`,
    };
  }
}
