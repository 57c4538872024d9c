// The device a command runs on: its name, caches and memory (for input rotation) and its clock.
import os from 'node:os';
import { parseDevice, requireDeviceRuntime, type DeviceLike, type DeviceType } from '@attn/core';
import { eventClock, hostClock, type Clock, type DeviceEvent } from '../timing/clock.js';
import { cpuInfo } from './cpu-info.js';

export interface Target {
  readonly type: DeviceType;
  readonly index: number;
  readonly name: string;
  readonly cacheBytes: number;
  readonly memoryBytes: number;
  readonly clock: Clock;
}

export function splitDevice(device: DeviceLike): { type: DeviceType; index: number } {
  if (typeof device !== 'string') return { type: device.type, index: device.index };
  const [type, index] = device.split(':');
  return { type: type as DeviceType, index: index === undefined ? 0 : Number(index) };
}

interface NativeEvent {
  record(): unknown;
  synchronize(): void;
  elapsedMs?(end: NativeEvent): number;
  elapsedTime?(end: NativeEvent): number;
}

type EventCtor = new (options: { device: number }) => NativeEvent;

/**
 * Events from a runtime package's Event class (@attn/cuda: `new Event({ device })`, record(),
 * synchronize(), elapsedMs(end)); null when the package has none of that shape.
 */
export function eventFactory(module: Record<string, unknown> | null, index: number): (() => DeviceEvent) | null {
  const Ctor = module?.Event;
  if (typeof Ctor !== 'function') return null;
  const proto = (Ctor as { prototype?: Record<string, unknown> }).prototype ?? {};
  const elapsedName =
    typeof proto.elapsedMs === 'function'
      ? 'elapsedMs'
      : typeof proto.elapsedTime === 'function'
        ? 'elapsedTime'
        : null;
  if (!elapsedName || typeof proto.record !== 'function' || typeof proto.synchronize !== 'function') return null;
  return () => {
    const native = new (Ctor as EventCtor)({ device: index });
    const wrapped: DeviceEvent & { native: NativeEvent } = {
      native,
      record: () => void native.record(),
      synchronize: () => native.synchronize(),
      elapsedTime: (end) => native[elapsedName]!((end as typeof wrapped).native),
    };
    return wrapped;
  };
}

/** `runtimeModule` is the loaded @attn/cuda or @attn/rocm module, used for its Event class. */
export function resolveTarget(device: DeviceLike, runtimeModule: Record<string, unknown> | null): Target {
  const { type, index } = splitDevice(device);
  if (type === 'cpu') {
    const cpu = cpuInfo();
    return {
      type,
      index,
      name: `${cpu.model} (${cpu.threads} threads)`,
      cacheBytes: cpu.lastLevelCacheBytes ?? 32 * 1024 ** 2,
      memoryBytes: os.totalmem(),
      clock: hostClock(),
    };
  }
  // Throws DeviceError / AttnInputError that say what is missing (runtime, device, index).
  const runtime = requireDeviceRuntime(parseDevice(device));
  const props = runtime.properties(index);
  const sync = () => runtime.synchronize(index);
  const makeEvent = eventFactory(runtimeModule, index);
  const clock = makeEvent
    ? eventClock(makeEvent, sync, `${type} events`)
    : hostClock(sync, 'wall clock + device synchronize');
  return {
    type,
    index,
    name: `${props.name} (${props.arch})`,
    cacheBytes: props.l2CacheBytes,
    memoryBytes: props.totalMemoryBytes,
    clock,
  };
}
