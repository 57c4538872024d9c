// NcclRing: the RingTransport over NCCL, one process per GPU (README, "Process model"). sendRecv
// queues one ncclGroup of ncclSend(to rank+1) / ncclRecv(from rank-1) per block on a communication
// stream of its own, ordered after the work already queued on the compute stream (an event: the sent
// blocks are written there, and the receive buffers, allocated on the compute stream's pool, may reuse
// memory that work still reads). The local attention the driver queues right after sendRecv runs on
// the compute stream beside the transfer. The promise settles when the transfer's event completes
// (polled from the event loop): work queued after that reads the received blocks complete, and what
// was sent may be freed. No compute-stream wait is queued at sendRecv time: it would hold back the
// very attention the transfer is meant to overlap.
// A transfer that does not complete within `transferTimeoutMs` (a peer died, stalled, or issued a
// different sequence of calls) aborts the communicator and rejects with ATTN_CP_TIMEOUT: no rank
// waits forever on a peer that will never answer.
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
  /** How long rank 1.. wait for rank 0's unique id (the rendezvous). Default 60 s. */
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

/** One timed transfer (profile: true): its channel, the bytes this rank sent, and its time on the communication stream. */
export interface TransferTime {
  readonly channel: RingChannel;
  readonly sentBytes: number;
  /** From the moment the communication stream could start (the compute queued before it done) to the transfer's end. */
  readonly ms: number;
}

export const DEFAULT_TRANSFER_TIMEOUT_MS = 600_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

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
    const t = o.transferTimeoutMs;
    if (t !== undefined && !(Number.isFinite(t) && t > 0))
      throw cpError('ATTN_CP_TRANSPORT', `transferTimeoutMs ${t}: give a positive number of milliseconds.`);
    const a = requireAddon();
    const id = await exchangeUniqueId(
      o.rendezvous,
      o.rank,
      o.key ?? 'nccl-unique-id',
      () => a.getUniqueId(),
      o.timeoutMs,
    );
    const comm = a.commInitRank(o.size, id, o.rank, o.device);
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
      ready.wait(this.#comms);
      this.#a.sendRecv(
        this.#comm,
        (this.rank + 1) % this.size,
        (this.rank + this.size - 1) % this.size,
        BigUint64Array.from(blocks, (t) => (t.numel === 0 ? 0n : t.dataPointer())),
        counts.send,
        BigUint64Array.from(received, (t) => (t.numel === 0 ? 0n : t.dataPointer())),
        counts.recv,
        this.#comms.handle,
      );
      const done = new Event({ device: this.device, timing: this.#profile }).record(this.#comms);
      const sentBytes = counts.send.reduce((x, y) => x + Number(y), 0);
      this.#stats.messages[channel] += 1;
      this.#stats.bytes[channel] += sentBytes;
      // Profiling keeps the pair until transferTimes() reads it; otherwise both go when the transfer settles.
      if (this.#profile) this.#timed.push({ channel, sentBytes, start: ready, end: done });
      const deadline = Date.now() + this.#transferTimeoutMs;
      return this.#settle(channel, deadline, done, this.#profile ? [] : [ready, done]).then(
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

  /**
   * Resolves once `done` completed. Rejects, aborting the communicator, on an asynchronous NCCL error,
   * at the deadline, or when the ring was aborted meanwhile (another transfer failed).
   */
  async #settle(channel: RingChannel, deadline: number, done: Event, events: readonly Event[]): Promise<void> {
    try {
      for (let spins = 0; !done.query(); spins++) {
        if (this.#comm === 0n) throw cpError('ATTN_CP_TRANSPORT', 'the NCCL ring was aborted.', this.#failed);
        const err = spins % 64 === 63 ? this.#a.asyncError(this.#comm) : '';
        if (err) {
          this.#failed = err;
          this.abort();
          throw cpError('ATTN_CP_TRANSPORT', `NCCL reported an asynchronous error: ${err}.`);
        }
        if (spins % 64 === 63 && Date.now() > deadline) {
          const e = cpError(
            'ATTN_CP_TIMEOUT',
            `rank ${this.rank}: a '${channel}' transfer did not complete within ${this.#transferTimeoutMs} ms; ` +
              `rank ${(this.rank + 1) % this.size} or ${(this.rank + this.size - 1) % this.size} stalled, died or ` +
              'issued a different sequence of calls (raise transferTimeoutMs if a ring step computes longer). The ring is aborted.',
          );
          this.#failed = e;
          this.abort();
          throw e;
        }
        await (spins < 256 ? new Promise((r) => setImmediate(r)) : sleep(0));
      }
    } finally {
      for (const e of events) e.dispose();
    }
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

  /** Frees the communicator after its work finished. */
  destroy(): void {
    if (this.#comm === 0n) return;
    this.#comms.synchronize();
    const c = this.#comm;
    this.#comm = 0n;
    this.#a.commDestroy(c);
    this.#comms.dispose();
  }
}
