// Shared by the GPU suites: whether a CUDA device is usable here, and the printed reason when not.
// A skipped suite is never a pass: the reason is printed so a CPU-only run says what it did not test.
// Through the package entry, so core has the 'cuda' runtime registered (tensor(..., { device: 'cuda' })).
import { cudaRuntime } from '../src/index.js';

const availability = cudaRuntime.availability();

export const gpu = availability.ok;
export const skipReason = availability.ok ? '' : availability.reason;

/** Prints, once per test file, why its GPU suite is skipped. */
export function announceSkip(suite: string): void {
  if (!gpu) console.log(`[@attn/cuda] GPU suite "${suite}" skipped: ${skipReason}`);
}
