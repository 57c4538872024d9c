// The soak run: many mixed calls in one process (sync and async forwards, backwards, inputs
// disposed mid-flight, calls that must fail) to catch what one call at a time cannot: memory that
// grows with the number of calls (host or device), and promises the library leaves unhandled.
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import { AttnError, envTestInt, randn, sdpaBackward, sdpaForward, sdpaForwardAsync } from '@attn/core';
import type { DeviceLike, FloatDType, Tensor } from '@attn/core';

export const SOAK_CALLS_ENV = 'ATTN_SOAK_CALLS'; // declared in core's TEST_ENV_FLAGS

export interface SoakOptions {
  readonly backend: string;
  /** 'cpu', 'cuda:0', ... */
  readonly device: DeviceLike;
  readonly dtype: FloatDType;
  /** Default ATTN_SOAK_CALLS, else 10,000. */
  readonly calls?: number;
  /** Device bytes in live buffers (a caching allocator's allocatedBytes), read after a synchronize. */
  readonly deviceBytes?: () => number;
}

export interface SoakReport {
  readonly calls: number;
  readonly counts: Readonly<Record<'sync' | 'async' | 'backward' | 'error' | 'disposedMidFlight', number>>;
  /** Resident set size after the warm-up (the first 30% of the calls) and at the end, in MiB. */
  readonly rssWarmMiB: number;
  readonly rssEndMiB: number;
  readonly deviceBytesBefore: number | null;
  readonly deviceBytesAfter: number | null;
  /** 'unhandledRejection' / 'rejectionHandled' events seen during the run. */
  readonly rejectionEvents: readonly string[];
  /** Calls that failed where they must not, or failed without a code. */
  readonly problems: readonly string[];
}

/** xorshift32: the same mix of calls on every run. */
function prng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 2 ** 32;
  };
}

const MiB = 2 ** 20;

/**
 * A full garbage collection, so that resident memory measures what is still referenced and not
 * how lazily V8 collects. Without --expose-gc at start-up, the flag is set now and gc() fetched
 * from a fresh context (V8 installs it there once the flag is on).
 */
function collectGarbage(): void {
  const g = (globalThis as { gc?: () => void }).gc;
  if (g) return g();
  v8.setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}

async function residentMiB(): Promise<number> {
  // Finalizers (device buffers, tensors dropped without dispose) run after a collection, on a later turn.
  collectGarbage();
  await new Promise((r) => setImmediate(r));
  collectGarbage();
  return process.memoryUsage().rss / MiB;
}

export async function runSoak(o: SoakOptions): Promise<SoakReport> {
  const total = o.calls ?? envTestInt(SOAK_CALLS_ENV) ?? 10_000;
  const rand = prng(25);
  const counts = { sync: 0, async: 0, backward: 0, error: 0, disposedMidFlight: 0 };
  const problems: string[] = [];
  const events: string[] = [];
  const onUnhandled = (r: unknown) => events.push(`unhandledRejection: ${r instanceof Error ? r.message : String(r)}`);
  const onHandledLate = () => events.push('rejectionHandled');
  process.on('unhandledRejection', onUnhandled);
  process.on('rejectionHandled', onHandledLate);

  const opts = { backends: [o.backend] };
  const make = (s: number, seed: number): [Tensor, Tensor, Tensor] => [
    randn([1, 2, s, 16], { dtype: o.dtype, device: o.device, seed }),
    randn([1, 2, s + 3, 16], { dtype: o.dtype, device: o.device, seed: seed + 1 }),
    randn([1, 2, s + 3, 16], { dtype: o.dtype, device: o.device, seed: seed + 2 }),
  ];
  const disposeAll = (ts: readonly (Tensor | undefined)[]) => ts.forEach((t) => t?.dispose());
  const expectCoded = (e: unknown, what: string) => {
    if (!(e instanceof AttnError) || !/^ATTN_/.test(e.code))
      problems.push(`${what}: not a coded AttnError: ${String(e)}`);
  };
  const inFlight = new Set<Promise<void>>();
  const track = (p: Promise<void>) => {
    inFlight.add(p);
    void p.finally(() => inFlight.delete(p));
  };
  const deviceBytesBefore = o.deviceBytes ? o.deviceBytes() : null;
  let rssWarm = 0;

  try {
    for (let call = 0; call < total; call++) {
      // The baseline after 30% of the calls: the first thousands grow malloc arenas and JIT code
      // (measured: +20 MiB by call 10,000, then flat to 40,000), which is no leak.
      if (call === Math.floor(total * 0.3)) {
        await Promise.all(inFlight);
        rssWarm = await residentMiB();
      }
      const s = 4 + Math.floor(rand() * 40);
      const kind = rand();
      if (kind < 0.35) {
        counts.sync++;
        const [q, k, v] = make(s, call);
        const fwd = sdpaForward(q, k, v, { ...opts, isCausal: rand() < 0.5 });
        disposeAll([q, k, v, fwd.out, fwd.logsumexp]);
      } else if (kind < 0.65) {
        counts.async++;
        const [q, k, v] = make(s, call);
        const midFlight = rand() < 0.5;
        const p = sdpaForwardAsync(q, k, v, opts).then(
          (fwd) => {
            disposeAll([fwd.out, fwd.logsumexp]);
            if (!midFlight) disposeAll([q, k, v]);
          },
          (e: unknown) => {
            problems.push(`async forward failed: ${String(e)}`);
            disposeAll([q, k, v]);
          },
        );
        if (midFlight) {
          counts.disposedMidFlight++;
          disposeAll([q, k, v]);
        }
        track(p);
        // At most 4 calls in flight.
        if (inFlight.size >= 4) await Promise.race(inFlight);
      } else if (kind < 0.85) {
        counts.backward++;
        const [q, k, v] = make(s, call);
        const fwd = sdpaForward(q, k, v, { ...opts, requiresGrad: true });
        const g = randn(fwd.out.shape, { dtype: o.dtype, device: o.device, seed: call + 3 });
        const grads = sdpaBackward(g, fwd);
        disposeAll([q, k, v, g, fwd.out, fwd.logsumexp, grads.dq, grads.dk, grads.dv]);
      } else {
        counts.error++;
        const [q, k, v] = make(s, call);
        const which = Math.floor(rand() * 3);
        try {
          if (which === 0) sdpaForward(q, k, v, { ...opts, scale: 0 });
          else if (which === 1) {
            k.dispose();
            sdpaForward(q, k, v, opts);
          } else {
            const fwd = sdpaForward(q, k, v, opts);
            disposeAll([fwd.out, fwd.logsumexp]);
            sdpaBackward(q, { ...fwd });
          }
          problems.push(`invalid call ${which} succeeded`);
        } catch (e) {
          expectCoded(e, `invalid call ${which}`);
        }
        // The rejected async form too, with its handler attached at once.
        await sdpaForwardAsync(q, q, q, { ...opts, dropoutP: 2 }).then(
          () => problems.push('async invalid call succeeded'),
          (e: unknown) => expectCoded(e, 'async invalid call'),
        );
        disposeAll([q, k, v]);
      }
    }
    await Promise.all(inFlight);
    // Let Node run its unhandled-rejection check.
    for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
  } finally {
    process.off('unhandledRejection', onUnhandled);
    process.off('rejectionHandled', onHandledLate);
  }
  const rssEnd = await residentMiB();
  return {
    calls: total,
    counts,
    rssWarmMiB: rssWarm,
    rssEndMiB: rssEnd,
    deviceBytesBefore,
    deviceBytesAfter: o.deviceBytes ? o.deviceBytes() : null,
    rejectionEvents: events,
    problems,
  };
}
