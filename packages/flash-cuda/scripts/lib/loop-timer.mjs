// The GPU scripts' one timing method: CUDA events around `calls` back-to-back calls after `warmup`
// untimed ones (the same loop as the torch scripts beside them).

/** A function timing fn: microseconds per call. */
export function loopTimer(cuda, { warmup, calls }) {
  const start = new cuda.Event();
  const end = new cuda.Event();
  return (fn) => {
    for (let i = 0; i < warmup; i++) fn();
    cuda.synchronize(0);
    start.record();
    for (let i = 0; i < calls; i++) fn();
    end.record();
    end.synchronize();
    return (start.elapsedMs(end) * 1e3) / calls;
  };
}
