// Where a rank's driver waits on its transport, for profilers. The drivers queue a step's compute and
// then await the transfer that the next step needs; on a GPU the compute stream idles between those
// two points only when the transfer is later than the compute. A profiler records a device event at
// `waiting` and another at `resumed` on the compute stream: their distance is the communication the
// compute did not hide (scripts/ring-bench.mjs does this).
import type { RingChannel } from './transport.js';

export interface RingTrace {
  /** Right before the driver awaits a transfer: all the work it could queue before it is queued. */
  waiting(channel: RingChannel, step: number): void;
  /** Right after that transfer delivered (or failed). */
  resumed(channel: RingChannel, step: number): void;
}

/** Awaits `p` between the trace's two marks (no trace: awaits `p`). */
export async function tracedWait<T>(
  trace: RingTrace | undefined,
  channel: RingChannel,
  step: number,
  p: Promise<T>,
): Promise<T> {
  if (!trace) return p;
  trace.waiting(channel, step);
  try {
    return await p;
  } finally {
    trace.resumed(channel, step);
  }
}
