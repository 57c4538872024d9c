// R ranks of a ring inside one process. Each send delivers a copy (ranks share no memory, as on
// separate GPUs), and each receive waits for the matching send of the previous rank, so the drivers
// run concurrently as promises and every rank's sequence of calls is checked against its neighbour's.
// abort() rejects every pending and later receive, so a failing rank cannot leave the others hanging.
import type { Tensor } from '@attn/core';
import { cpError } from './errors.js';
import { copyTensor } from './host.js';
import type { RingChannel, RingTransport } from './transport.js';

interface Waiter {
  resolve(blocks: Tensor[]): void;
  reject(e: unknown): void;
}

interface Mailbox {
  readonly delivered: Tensor[][];
  readonly waiting: Waiter[];
}

export interface LoopbackStats {
  /** sendRecv calls, per channel (every rank's calls counted). */
  readonly messages: Record<RingChannel, number>;
  /** Bytes sent, per channel. */
  readonly bytes: Record<RingChannel, number>;
}

export class LoopbackRing {
  readonly size: number;
  readonly #boxes = new Map<string, Mailbox>();
  #aborted: unknown = null;
  readonly #stats = { messages: { kv: 0, grad: 0 }, bytes: { kv: 0, grad: 0 } };

  constructor(size: number) {
    if (!Number.isInteger(size) || size < 1)
      throw cpError('ATTN_CP_TRANSPORT', `a ring needs an integer size >= 1; got ${size}.`);
    this.size = size;
  }

  get stats(): LoopbackStats {
    return { messages: { ...this.#stats.messages }, bytes: { ...this.#stats.bytes } };
  }

  endpoint(rank: number): RingTransport {
    if (!Number.isInteger(rank) || rank < 0 || rank >= this.size)
      throw cpError('ATTN_CP_TRANSPORT', `rank must be in [0, ${this.size}); got ${rank}.`);
    return {
      rank,
      size: this.size,
      sendRecv: (channel, blocks, incoming) => this.#sendRecv(rank, channel, blocks, incoming),
    };
  }

  /** Rejects every pending and later receive with `reason`. */
  abort(reason: unknown): void {
    if (this.#aborted !== null) return;
    this.#aborted = reason ?? new Error('aborted');
    for (const box of this.#boxes.values()) {
      for (const w of box.waiting.splice(0)) w.reject(this.#abortError());
      for (const blocks of box.delivered.splice(0)) for (const t of blocks) t.dispose();
    }
  }

  #abortError(): Error {
    return cpError('ATTN_CP_TRANSPORT', 'the ring was aborted: another rank failed (see the cause).', this.#aborted);
  }

  #box(rank: number, channel: RingChannel): Mailbox {
    const key = `${channel}:${rank}`;
    let box = this.#boxes.get(key);
    if (!box) this.#boxes.set(key, (box = { delivered: [], waiting: [] }));
    return box;
  }

  #sendRecv(
    rank: number,
    channel: RingChannel,
    blocks: readonly Tensor[],
    incoming: readonly (readonly number[])[],
  ): Promise<Tensor[]> {
    if (this.#aborted !== null) return Promise.reject(this.#abortError());
    const copies = blocks.map((t) => copyTensor(t));
    this.#stats.messages[channel] += 1;
    this.#stats.bytes[channel] += blocks.reduce((n, t) => n + t.numel * t.itemBytes, 0);
    const to = this.#box((rank + 1) % this.size, channel);
    const waiter = to.waiting.shift();
    if (waiter) waiter.resolve(copies);
    else to.delivered.push(copies);
    const mine = this.#box(rank, channel);
    // What arrives must have the shapes the receiver announced (an NCCL receive is sized by them).
    const check = (got: Tensor[]): Tensor[] => {
      const same =
        got.length === incoming.length &&
        got.every((t, i) => t.shape.length === incoming[i]!.length && t.shape.every((n, d) => n === incoming[i]![d]));
      if (!same) {
        for (const t of got) t.dispose();
        throw cpError(
          'ATTN_CP_TRANSPORT',
          `rank ${rank} expected ${incoming.map((s) => `[${s.join(', ')}]`).join(' ')} on '${channel}'; got ${got.map((t) => `[${t.shape.join(', ')}]`).join(' ')}.`,
        );
      }
      return got;
    };
    const ready = mine.delivered.shift();
    if (ready) return Promise.resolve(ready).then(check);
    return new Promise<Tensor[]>((resolve, reject) => mine.waiting.push({ resolve, reject })).then(check);
  }
}
