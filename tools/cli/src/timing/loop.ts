// What a user's loop pays per call: the clock around many back-to-back calls, each followed by its
// cleanup (disposing its outputs) inside the loop, and beside it the host's own time to issue each
// call (wall clock around the call and its cleanup, no synchronization). On a GPU the device runs
// behind the host: when the host time per call exceeds the kernel's, the loop is host-bound and the
// per-call figure is the host's.
import { summarize } from '../stats.js';
import type { Clock } from './clock.js';

export interface LoopTiming {
  /** Calls per timed loop. */
  readonly calls: number;
  /** Loops timed; the figures are their medians. */
  readonly loops: number;
  /** Clock time of a loop / calls. */
  readonly perCallMs: number;
  /** Host wall time spent inside the calls and cleanups of a loop / calls. */
  readonly hostPerCallMs: number;
}

export function timeLoop(
  call: (set: number) => () => void,
  sets: number,
  clock: Clock,
  calls: number,
  loops = 5,
): LoopTiming {
  const perCall: number[] = [];
  const host: number[] = [];
  for (let l = 0; l < loops; l++) {
    let hostMs = 0;
    const { ms } = clock.time(() => {
      for (let c = 0; c < calls; c++) {
        const t0 = performance.now();
        call(c % sets)();
        hostMs += performance.now() - t0;
      }
    });
    perCall.push(ms / calls);
    host.push(hostMs / calls);
  }
  return { calls, loops, perCallMs: summarize(perCall).medianMs, hostPerCallMs: summarize(host).medianMs };
}
