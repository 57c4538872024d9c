import { describe, expect, it } from 'vitest';
import { eventClock } from '../timing/clock.js';
import { eventFactory, resolveTarget, splitDevice } from './target.js';

/** Shaped like @attn/cuda's Event: new Event({ device }), record(), synchronize(), elapsedMs(end). */
class FakeEvent {
  static log: string[] = [];
  static clock = 0;
  readonly device: number;
  at = -1;
  constructor(opts: { device: number }) {
    this.device = opts.device;
  }
  record() {
    this.at = FakeEvent.clock;
    FakeEvent.log.push(`record@${this.device}`);
    return this;
  }
  synchronize() {
    FakeEvent.log.push('sync');
  }
  elapsedMs(end: FakeEvent) {
    return end.at - this.at;
  }
}

describe('target device', () => {
  it('splits device strings', () => {
    expect(splitDevice('cuda:1')).toEqual({ type: 'cuda', index: 1 });
    expect(splitDevice('rocm')).toEqual({ type: 'rocm', index: 0 });
  });

  it('times with the runtime package events on the right device', () => {
    const make = eventFactory({ Event: FakeEvent }, 2)!;
    expect(make).not.toBeNull();
    const clock = eventClock(make, () => {});
    const t = clock.time(() => {
      FakeEvent.clock += 7;
    });
    expect(t.ms).toBe(7);
    expect(FakeEvent.log).toEqual(['record@2', 'record@2', 'sync']);
  });

  it('falls back to the wall clock when a package has no usable Event', () => {
    expect(eventFactory(null, 0)).toBeNull();
    expect(eventFactory({ Event: class {} }, 0)).toBeNull();
  });

  it('describes the CPU', () => {
    const t = resolveTarget('cpu', null);
    expect(t.type).toBe('cpu');
    expect(t.name).toMatch(/\d+ threads/);
    expect(t.cacheBytes).toBeGreaterThan(0);
    expect(t.clock.description).toBe('wall clock');
  });
});
