// Poisoned outputs. Backends allocate their own outputs, so poisoning means making the device's
// allocator hand back memory full of 0xFF bytes, which is NaN in float64, float32, float16 and
// bfloat16 alike: before each run, blocks of the outputs' sizes are allocated, filled through the
// runtime's fill() and freed, so a caching allocator (as @attn/cuda's) reuses them for the outputs.
// An element the backend never writes then reads NaN, and NaN never passes (accuracy.ts).
//
// On the CPU, core's empty() returns zeroed typed arrays and nothing can poison them; there an
// unwritten element is caught wherever the expected value is not exactly 0 (logsumexp -inf of a
// fully masked row included), since every element is compared.
import { getDeviceRuntime } from '@attn/core';
import type { Device } from '@attn/core';

export function poisonAllocator(device: Device, byteSizes: readonly number[]): void {
  if (device.type === 'cpu') return;
  const runtime = getDeviceRuntime(device.type);
  if (!runtime)
    throw new Error(`poisonAllocator: no '${device.type}' runtime is registered (import its device package).`);
  for (const bytes of byteSizes) {
    if (bytes === 0) continue;
    const block = runtime.allocate(bytes, device.index);
    try {
      runtime.fill(block, 0, bytes, 0xff);
    } finally {
      block.dispose();
    }
  }
}
