import { afterEach, describe, expect, it, vi } from 'vitest';
import { eventClock, hostClock, type Clock, type DeviceEvent } from './clock.js';
import { measure, rotationSets } from './measure.js';

/** A clock whose samples are the given durations, in order. */
function scriptedClock(durations: number[]): Clock {
  let i = 0;
  return { description: 'scripted', synchronize() {}, time: (fn) => ({ result: fn(), ms: durations[i++] ?? 1 }) };
}

describe('measure', () => {
  afterEach(() => vi.restoreAllMocks());

  it('warms up untimed, rotates sets, and reports the median', () => {
    const seen: number[] = [];
    const cleaned: number[] = [];
    const m = measure(
      (set) => {
        seen.push(set);
        return () => cleaned.push(set);
      },
      scriptedClock([100, 100, 5, 1, 3, 2, 4]),
      { warmup: 2, repeat: 5, budgetMs: 1e9, minSamples: 3, sets: 3 },
    );
    expect(seen).toEqual([0, 1, 2, 0, 1, 2, 0]);
    expect(cleaned).toEqual(seen);
    expect(m.samplesMs).toEqual([5, 1, 3, 2, 4]);
    expect(m.medianMs).toBe(3);
  });

  it('warms up for at least warmupMs as well as for warmup calls', () => {
    let now = 0;
    vi.spyOn(performance, 'now').mockImplementation(() => now);
    let calls = 0;
    const m = measure(
      () => {
        calls++;
        now += 1; // each call takes 1 ms of the host's clock
      },
      scriptedClock(Array(20).fill(1)),
      { warmup: 2, warmupMs: 5, repeat: 3, budgetMs: 1e9, minSamples: 3, sets: 1 },
    );
    expect(calls - m.count).toBe(5); // the time bound (5 ms) outlasts the count (2)
    expect(m.count).toBe(3);
  });

  it('stops at the budget once it has the minimum samples', () => {
    const m = measure(() => {}, scriptedClock([600, 600, 600, 600, 600]), {
      warmup: 0,
      repeat: 100,
      budgetMs: 1000,
      minSamples: 3,
      sets: 1,
    });
    expect(m.count).toBe(3);
  });

  it('synchronizes around host-timed calls', () => {
    const log: string[] = [];
    const clock = hostClock(() => log.push('sync'));
    const { result } = clock.time(() => (log.push('call'), 7));
    expect(result).toBe(7);
    expect(log).toEqual(['sync', 'call', 'sync']);
  });

  it('records events around device-timed calls and waits only for the end', () => {
    const log: string[] = [];
    let n = 0;
    const make = (): DeviceEvent => {
      const id = n++ === 0 ? 'start' : 'end';
      return {
        record: () => log.push(`record ${id}`),
        synchronize: () => log.push(`wait ${id}`),
        elapsedTime: () => 2.5,
      };
    };
    const t = eventClock(make, () => log.push('sync')).time(() => log.push('call'));
    expect(t.ms).toBe(2.5);
    expect(log).toEqual(['record start', 'call', 'record end', 'wait end']);
  });
});

describe('rotationSets', () => {
  const MiB = 1024 ** 2;
  it('covers twice the cache, at least two sets', () => {
    expect(rotationSets(10 * MiB, 50 * MiB, 1e12)).toBe(8); // wants 10, capped at 8
    expect(rotationSets(40 * MiB, 50 * MiB, 1e12)).toBe(3);
    expect(rotationSets(400 * MiB, 50 * MiB, 1e12)).toBe(2);
  });
  it('never exceeds the memory budget but keeps one set', () => {
    expect(rotationSets(400 * MiB, 50 * MiB, 500 * MiB)).toBe(1);
    expect(rotationSets(400 * MiB, 50 * MiB, 100 * MiB)).toBe(1);
  });
});
