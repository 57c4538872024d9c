// NcclRing: the RingTransport over NCCL, one process per GPU (README, "Process model"). sendRecv
// queues one ncclGroup of ncclSend(to rank+1) / ncclRecv(from rank-1) per block on a communication
// stream of its own, ordered after the work already queued on the compute stream (an event: the sent
// blocks are written there, and the receive buffers, allocated on the compute stream's pool, may reuse
// memory that work still reads). The local attention the driver queues right after sendRecv runs on
// the compute stream beside the transfer. The promise settles when the transfer's event completes
// (polled from the event loop): work queued after that reads the received blocks complete, and what
// was sent may be freed. No compute-stream wait is queued at sendRecv time: it would hold back the
// very attention the transfer is meant to overlap.
//
// The communicator is non-blocking, so the event loop never waits inside NCCL: joining, and a
// transfer whose peer connection is still being set up, leave it "in progress", and the ring polls.
// NCCL's rule for such communicators is kept by issuing calls one after another: a call goes to NCCL
// only once the previous one is on its stream, and the transfer's end event is recorded only then.
// Every wait has a deadline: joining within `timeoutMs`, each transfer within `transferTimeoutMs`;
// past it the communicator is aborted and the promise rejects with ATTN_CP_TIMEOUT, so no rank waits
// forever on a peer that stalled, died or issued a different sequence of calls.
import { empty } from '@attn/core';
import type { Tensor } from '@attn/core';
import { Event, Stream } from '@attn/cuda';
import { cpError } from '../errors.js';
import { exchangeUniqueId, type Rendezvous } from '../rendezvous/file.js';
import type { RingChannel, RingTransport } from '../transport.js';
import { type ContextParallelAddon, requireAddon } from './addon.js';
import { transferBytes } from './transfer-bytes.js';

export interface NcclRingOptions {
  readonly rank: number;
  readonly size: number;
  /** The CUDA device of this rank (one process per GPU). */
  readonly device: number;
  /** Where rank 0 publishes the ncclUniqueId (FileRendezvous on one host). */
  readonly rendezvous: Rendezvous;
  /** The rendezvous key of this communicator (unique per job). Default 'nccl-unique-id'. */
  readonly key?: string;
  /** How long a rank waits for rank 0's unique id (the rendezvous), then for all ranks to join; 60 s each. */
  readonly timeoutMs?: number;
  /**
   * How long one sendRecv may take, from the call to the transfer's completion, before the ring is
   * aborted (ATTN_CP_TIMEOUT). It covers the local compute queued before the transfer and the peer's
   * arrival at the matching call, so it must exceed a ring step's compute. Default 10 minutes.
   */
  readonly transferTimeoutMs?: number;
  /** Time every transfer with CUDA events on the communication stream (`transferTimes()`). Default false. */
  readonly profile?: boolean;
}

/** One timed transfer (profile: true): its channel, the bytes this rank sent, its time on the communication stream. */
export interface TransferTime {
  readonly channel: RingChannel;
  readonly sentBytes: number;
  /** From the moment the communication stream could start (the compute queued before it done) to the transfer's end. */
  readonly ms: number;
}

export const DEFAULT_TRANSFER_TIMEOUT_MS = 600_000;
/** How long create() waits for every rank to join, as the rendezvous waits for the id. */
export const DEFAULT_JOIN_TIMEOUT_MS = 60_000;
/** How long destroy() waits for the communicator to flush. */
const FINALIZE_TIMEOUT_MS = 30_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Yields to the event loop: at once for the first polls, then through a timer (no busy loop). */
const pause = (spins: number) => (spins < 256 ? new Promise((r) => setImmediate(r)) : sleep(spins < 2048 ? 0 : 1));

/**
 * Resolves once the communicator's last call is on its stream (commStatus ''). Rejects on an
 * asynchronous error (ATTN_CP_TRANSPORT) or past the deadline (ATTN_CP_TIMEOUT); the caller aborts.
 */
async function untilReady(a: ContextParallelAddon, comm: bigint, deadline: number, late: () => string): Promise<void> {
  for (let spins = 0; ; spins++) {
    const status = a.commStatus(comm);
    if (status === '') return;
    if (status !== 'in-progress') throw cpError('ATTN_CP_TRANSPORT', `NCCL reported an asynchronous error: ${status}.`);
    if (Date.now() > deadline) throw cpError('ATTN_CP_TIMEOUT', late());
    await pause(spins);
  }
}

export class NcclRing implements RingTransport {
  readonly rank: number;
  readonly size: number;
  readonly device: number;
  readonly #a: ContextParallelAddon;
  #comm: bigint;
  readonly #comms: Stream;
  #failed: unknown = null;
  readonly #transferTimeoutMs: number;
  readonly #profile: boolean;
  readonly #timed: { channel: RingChannel; sentBytes: number; start: Event; end: Event }[] = [];
  /** The last call handed to NCCL, until it is on its stream (null: none pending). */
  #tail: Promise<void> | null = null;
  readonly #stats = { messages: { kv: 0, grad: 0 }, bytes: { kv: 0, grad: 0 } };

  private constructor(a: ContextParallelAddon, comm: bigint, o: NcclRingOptions) {
    this.#a = a;
    this.#comm = comm;
    this.rank = o.rank;
    this.size = o.size;
    this.device = o.device;
    this.#comms = new Stream({ device: o.device });
    this.#transferTimeoutMs = o.transferTimeoutMs ?? DEFAULT_TRANSFER_TIMEOUT_MS;
    this.#profile = o.profile ?? false;
  }

  /** Exchanges the unique id through the rendezvous and joins the communicator (every rank must call it). */
  static async create(o: NcclRingOptions): Promise<NcclRing> {
    if (!Number.isInteger(o.size) || o.size < 1 || !Number.isInteger(o.rank) || o.rank < 0 || o.rank >= o.size)
      throw cpError('ATTN_CP_TRANSPORT', `rank ${o.rank} of ${o.size}: need integers 0 <= rank < size.`);
    for (const [name, t] of [
      ['timeoutMs', o.timeoutMs],
      ['transferTimeoutMs', o.transferTimeoutMs],
    ] as const) {
      if (t !== undefined && !(typeof t === 'number' && Number.isFinite(t) && t > 0))
        throw cpError('ATTN_CP_TRANSPORT', `${name} ${String(t)}: give a positive number of milliseconds.`);
    }
    const a = requireAddon();
    const id = await exchangeUniqueId(
      o.rendezvous,
      o.rank,
      o.key ?? 'nccl-unique-id',
      () => a.getUniqueId(),
      o.timeoutMs,
    );
    const comm = a.commInitRank(o.size, id, o.rank, o.device);
    const joinMs = o.timeoutMs ?? DEFAULT_JOIN_TIMEOUT_MS;
    try {
      await untilReady(
        a,
        comm,
        Date.now() + joinMs,
        () =>
          `rank ${o.rank}: not every one of the ${o.size} ranks joined the communicator within ${joinMs} ms; did they all start?`,
      );
    } catch (e) {
      a.commAbort(comm);
      throw e;
    }
    return new NcclRing(a, comm, o);
  }

  get stats(): { messages: Record<RingChannel, number>; bytes: Record<RingChannel, number> } {
    return { messages: { ...this.#stats.messages }, bytes: { ...this.#stats.bytes } };
  }

  sendRecv(
    channel: RingChannel,
    blocks: readonly Tensor[],
    incoming: readonly (readonly number[])[],
  ): Promise<Tensor[]> {
    if (this.#failed !== null)
      return Promise.reject(cpError('ATTN_CP_TRANSPORT', 'the NCCL ring failed earlier.', this.#failed));
    if (blocks.length !== incoming.length)
      return Promise.reject(
        cpError('ATTN_CP_TRANSPORT', `${blocks.length} blocks sent, ${incoming.length} shapes announced.`),
      );
    const received: Tensor[] = [];
    try {
      for (const [i, b] of blocks.entries()) {
        if (b.device.type !== 'cuda' || b.device.index !== this.device || !b.isContiguous())
          throw cpError('ATTN_CP_TRANSPORT', `block ${i}: NcclRing sends contiguous tensors on cuda:${this.device}.`);
        received.push(empty(incoming[i]!, { dtype: b.dtype, device: b.device }));
      }
      // Sizes must agree pairwise between sender and receiver: every rank derives them from the layout.
      // With uneven shards what goes to rank+1 and what comes from rank-1 differ in size.
      const counts = transferBytes(blocks, received);
      const ready = new Event({ device: this.device, timing: this.#profile }).record();
      const sentBytes = counts.send.reduce((x, y) => x + Number(y), 0);
      this.#stats.messages[channel] += 1;
      this.#stats.bytes[channel] += sentBytes;
      const issue = () => {
        ready.wait(this.#comms);
        return this.#a.sendRecv(
          this.#comm,
          (this.rank + 1) % this.size,
          (this.rank + this.size - 1) % this.size,
          BigUint64Array.from(blocks, (t) => (t.numel === 0 ? 0n : t.dataPointer())),
          counts.send,
          BigUint64Array.from(received, (t) => (t.numel === 0 ? 0n : t.dataPointer())),
          counts.recv,
          this.#comms.handle,
        );
      };
      return this.#transfer(channel, Date.now() + this.#transferTimeoutMs, ready, issue, sentBytes).then(
        () => received,
        (e: unknown) => {
          for (const t of received) t.dispose();
          throw e;
        },
      );
    } catch (e) {
      for (const t of received) t.dispose();
      this.#failed = e;
      return Promise.reject(
        e instanceof Error && 'code' in e ? e : cpError('ATTN_CP_TRANSPORT', 'NCCL sendRecv failed.', e),
      );
    }
  }

  /** Issues the group (after the previous call is on its stream), then waits for the transfer's end. */
  async #transfer(
    channel: RingChannel,
    deadline: number,
    ready: Event,
    issue: () => boolean,
    sentBytes: number,
  ): Promise<void> {
    const events = [ready];
    try {
      await this.#issue(channel, deadline, issue);
      const done = new Event({ device: this.device, timing: this.#profile }).record(this.#comms);
      events.push(done);
      await this.#settle(channel, deadline, done);
      if (this.#profile) {
        this.#timed.push({ channel, sentBytes, start: ready, end: done });
        events.length = 0;
      }
    } finally {
      for (const e of events) e.dispose();
    }
  }

  /** Runs `issue` once every earlier call is on its stream; resolves when this one is. */
  #issue(channel: RingChannel, deadline: number, issue: () => boolean): Promise<void> {
    const run = (): Promise<void> =>
      this.#guard(
        (async () => {
          if (this.#comm === 0n) throw cpError('ATTN_CP_TRANSPORT', 'the NCCL ring was aborted.', this.#failed);
          if (issue()) await untilReady(this.#a, this.#comm, deadline, () => this.#late(channel));
        })(),
      );
    const p = this.#tail === null ? run() : this.#tail.then(run);
    const tail = p.then(
      () => undefined,
      () => undefined,
    );
    this.#tail = tail;
    void tail.then(() => {
      if (this.#tail === tail) this.#tail = null;
    });
    return p;
  }

  /** Resolves once `done` completed; rejects, aborting the ring, on an NCCL error, at the deadline, or once aborted. */
  async #settle(channel: RingChannel, deadline: number, done: Event): Promise<void> {
    for (let spins = 0; !done.query(); spins++) {
      if (this.#comm === 0n) throw cpError('ATTN_CP_TRANSPORT', 'the NCCL ring was aborted.', this.#failed);
      if (spins % 64 !== 63) {
        await pause(spins);
        continue;
      }
      // 'in-progress' is a later call being set up, not a fault of this transfer.
      const status = this.#a.commStatus(this.#comm);
      if (status !== '' && status !== 'in-progress')
        throw this.#fail(cpError('ATTN_CP_TRANSPORT', `NCCL reported an asynchronous error: ${status}.`));
      if (Date.now() > deadline) throw this.#fail(cpError('ATTN_CP_TIMEOUT', this.#late(channel)));
      await pause(spins);
    }
  }

  /** Passes `p` through; when it fails, the ring fails with it (#fail). */
  async #guard(p: Promise<void>): Promise<void> {
    try {
      await p;
    } catch (e) {
      throw this.#fail(e);
    }
  }

  /** Marks the ring failed and aborts its communicator (once); returns `e` to throw. */
  #fail(e: unknown): unknown {
    this.#failed ??= e;
    this.abort();
    return e;
  }

  #late(channel: RingChannel): string {
    const next = (this.rank + 1) % this.size;
    const prev = (this.rank + this.size - 1) % this.size;
    return (
      `rank ${this.rank}: a '${channel}' transfer did not complete within ${this.#transferTimeoutMs} ms; rank ${next} ` +
      `or ${prev} stalled, died or issued a different sequence of calls (raise transferTimeoutMs if a ring step ` +
      'computes longer). The ring is aborted.'
    );
  }

  /** The timed transfers since the last call (profile: true), oldest first; waits for them to finish. */
  transferTimes(): TransferTime[] {
    const out = this.#timed.splice(0).map((t) => {
      t.end.synchronize();
      const ms = t.start.elapsedMs(t.end);
      t.start.dispose();
      t.end.dispose();
      return { channel: t.channel, sentBytes: t.sentBytes, ms };
    });
    return out;
  }

  /** Gives up on pending work (another rank failed); later sendRecv calls reject. */
  abort(): void {
    if (this.#comm === 0n) return;
    this.#failed ??= new Error('aborted');
    const c = this.#comm;
    this.#comm = 0n;
    this.#a.commAbort(c);
  }

  /** Frees the communicator after its work finished (every rank calls it once its last transfer settled). */
  async destroy(): Promise<void> {
    if (this.#comm === 0n) return;
    await this.#tail;
    this.#comms.synchronize();
    const c = this.#comm;
    this.#a.commFinalize(c);
    await this.#guard(
      untilReady(
        this.#a,
        c,
        Date.now() + FINALIZE_TIMEOUT_MS,
        () => `rank ${this.rank}: the communicator did not flush within ${FINALIZE_TIMEOUT_MS} ms; it was aborted.`,
      ),
    );
    this.#comm = 0n;
    this.#a.commDestroy(c);
    this.#comms.dispose();
  }
}
