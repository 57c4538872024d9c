// Whether a call's index tensors (cuSeqlensQ/K, sequsedK, blockTable, and sdpaKvCache's lengths and
// tables) are read on the host to check their values, or stay on the device. One decision for graph
// capture and for the indexValuesOnDevice option, so that both validate the same way: dtype, shape,
// contiguity and device only, with kernels clamping what they read.
import type { Device } from './device.js';
import { describeValue } from './describe-value.js';
import { deviceCapturing } from './device-registry.js';
import { AttnInputError } from './errors.js';

/** The option as given: absent (false) or a boolean; anything else is ATTN_OPTION. */
export function checkIndexValuesOption(value: unknown): boolean {
  if (value === undefined) return false;
  if (typeof value !== 'boolean') {
    throw new AttnInputError('ATTN_OPTION', `indexValuesOnDevice must be true or false, got ${describeValue(value)}.`);
  }
  return value;
}

export interface IndexValuePolicy {
  /** The device's current stream is capturing a graph (deviceCapturing). */
  readonly capturing: boolean;
  /** true: leave the index values on the device (no host read); false: read and check them. */
  readonly onDevice: boolean;
}

/**
 * The policy for a call on `device` with the user's indexValuesOnDevice option: on the device while
 * capturing, or when the user asks; never on the CPU (its values are host memory, read at no cost).
 */
export function indexValuePolicy(device: Device, option: unknown): IndexValuePolicy {
  const asked = checkIndexValuesOption(option);
  const capturing = deviceCapturing(device);
  return { capturing, onDevice: device.type !== 'cpu' && (capturing || asked) };
}
