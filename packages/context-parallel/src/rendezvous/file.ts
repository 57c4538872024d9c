// The bootstrap of a communicator: rank 0 makes NCCL's unique id (ncclGetUniqueId, 128 bytes) and
// every other rank must get the same bytes before ncclCommInitRank. This is the file form of that
// rendezvous: a folder every rank of the host can read (a temp folder the launcher names). A value is
// written to a temporary name and renamed into place, so a reader sees all of it or nothing; readers
// poll until it appears or their deadline passes. No network address at all.
// Verified on the CPU with in-process ranks and with child processes; the NCCL id it will carry has
// never been produced here (no NCCL transport yet).
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { cpError } from '../errors.js';

/** NCCL_UNIQUE_ID_BYTES in nccl.h. */
export const NCCL_UNIQUE_ID_BYTES = 128;

export interface Rendezvous {
  publish(key: string, value: Uint8Array): Promise<void>;
  /** The published value; rejects with ATTN_CP_TRANSPORT after timeoutMs. */
  lookup(key: string, timeoutMs: number): Promise<Uint8Array>;
}

function checkKey(key: string): void {
  if (!/^[A-Za-z0-9_.-]{1,128}$/.test(key) || key.startsWith('.')) {
    throw cpError(
      'ATTN_CP_TRANSPORT',
      `a rendezvous key is 1-128 of [A-Za-z0-9_.-], not starting with '.'; got ${JSON.stringify(key)}.`,
    );
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class FileRendezvous implements Rendezvous {
  constructor(
    readonly dir: string,
    readonly pollMs = 10,
  ) {}

  async publish(key: string, value: Uint8Array): Promise<void> {
    checkKey(key);
    await mkdir(this.dir, { recursive: true });
    const tmp = join(this.dir, `.${key}.${process.pid}.${randomBytes(6).toString('hex')}`);
    await writeFile(tmp, value);
    await rename(tmp, join(this.dir, key));
  }

  async lookup(key: string, timeoutMs: number): Promise<Uint8Array> {
    checkKey(key);
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      try {
        return new Uint8Array(await readFile(join(this.dir, key)));
      } catch (e) {
        if ((e as { code?: string }).code !== 'ENOENT')
          throw cpError('ATTN_CP_TRANSPORT', `reading rendezvous key '${key}' in ${this.dir} failed.`, e);
      }
      if (Date.now() >= deadline) {
        throw cpError(
          'ATTN_CP_TRANSPORT',
          `no rank published '${key}' in ${this.dir} within ${timeoutMs} ms: did rank 0 start, with the same folder?`,
        );
      }
      await sleep(this.pollMs);
    }
  }
}

/**
 * Rank 0 makes the id (`make`, ncclGetUniqueId in the native transport) and publishes it under `key`;
 * the others look it up. Every rank returns the same bytes.
 */
export async function exchangeUniqueId(
  rdv: Rendezvous,
  rank: number,
  key: string,
  make: () => Uint8Array,
  timeoutMs = 60_000,
): Promise<Uint8Array> {
  if (rank === 0) {
    const id = make();
    if (id.length !== NCCL_UNIQUE_ID_BYTES)
      throw cpError('ATTN_CP_TRANSPORT', `a unique id is ${NCCL_UNIQUE_ID_BYTES} bytes; got ${id.length}.`);
    await rdv.publish(key, id);
    return id;
  }
  const id = await rdv.lookup(key, timeoutMs);
  if (id.length !== NCCL_UNIQUE_ID_BYTES)
    throw cpError(
      'ATTN_CP_TRANSPORT',
      `rendezvous key '${key}' holds ${id.length} bytes, not a ${NCCL_UNIQUE_ID_BYTES}-byte unique id.`,
    );
  return id;
}
