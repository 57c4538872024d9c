// How one call is timed. On the host: synchronize the device, read the wall clock, call, synchronize,
// read it again. Device clocks (CUDA events) plug in through the same interface.

export interface Timed<R> {
  readonly ms: number;
  readonly result: R;
}

export interface Clock {
  /** 'wall clock + synchronize', 'cuda events', ... (printed with the results). */
  readonly description: string;
  /** Waits for all queued work on the device. */
  synchronize(): void;
  time<R>(fn: () => R): Timed<R>;
}

export function hostClock(synchronize: () => void = () => {}, description = 'wall clock'): Clock {
  return {
    description,
    synchronize,
    time(fn) {
      synchronize();
      const t0 = performance.now();
      const result = fn();
      synchronize();
      return { ms: performance.now() - t0, result };
    },
  };
}

/** The subset of a CUDA-style event the clock needs (structural, so any runtime's Event fits). */
export interface DeviceEvent {
  record(): void;
  synchronize(): void;
  elapsedTime(end: DeviceEvent): number;
}

/** Events recorded on the device's stream around the call; the host waits only for the end event. */
export function eventClock(
  makeEvent: () => DeviceEvent,
  synchronize: () => void,
  description = 'device events',
): Clock {
  const start = makeEvent();
  const end = makeEvent();
  return {
    description,
    synchronize,
    time(fn) {
      start.record();
      const result = fn();
      end.record();
      end.synchronize();
      return { ms: start.elapsedTime(end), result };
    },
  };
}
