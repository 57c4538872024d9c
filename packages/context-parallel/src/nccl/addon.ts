// context_parallel.node's interface (native/src/addon.cpp) and its loading through @attn/native:
// lazily, once; a failure is remembered and reported as the reason (no NCCL at build time, not built).
import { findPackageRoot, lazyNativeAddon, type NativeAddonLoad } from '@attn/native';
import { dirname } from 'node:path';
import { cpError } from '../errors.js';
import { findNccl, type NcclReport } from './find.js';

export interface ContextParallelAddon {
  getUniqueId(): Uint8Array;
  /** A non-blocking communicator's handle, at once; usable once commStatus says ''. */
  commInitRank(size: number, id: Uint8Array, rank: number, device: number): bigint;
  /** Flushes the issued work; the communicator is in progress until commStatus says '', then commDestroy. */
  commFinalize(comm: bigint): void;
  commDestroy(comm: bigint): void;
  /** Gives up on pending work and frees the communicator. */
  commAbort(comm: bigint): void;
  /** '' (ready), 'in-progress' (the last call is still being set up or enqueued), or the asynchronous error. */
  commStatus(comm: bigint): string;
  /**
   * One group of ncclSend(send[i] -> next, sendBytes[i]) + ncclRecv(recv[i] <- prev, recvBytes[i]) for
   * `stream`. True: still being enqueued (poll commStatus until ''); false: its work is on `stream`.
   */
  sendRecv(
    comm: bigint,
    next: number,
    prev: number,
    send: BigUint64Array,
    sendBytes: BigUint64Array,
    recv: BigUint64Array,
    recvBytes: BigUint64Array,
    stream: bigint,
  ): boolean;
  merge(
    accOut: bigint,
    accLse: bigint,
    partOut: bigint,
    partLse: bigint,
    rows: number,
    dv: number,
    elem: number,
    stream: bigint,
  ): void;
  accumulate(acc: bigint, x: bigint, n: number, elem: number, stream: bigint): void;
  convert(dst: bigint, src: bigint, n: number, elem: number, stream: bigint): void;
  buildInfo(): {
    ncclVersion: number;
    ncclHeaderVersion: number;
    ncclLibrary: string;
    cudaArchs: string;
    uniqueIdBytes: number;
  };
}

export const addonLoad: () => NativeAddonLoad<ContextParallelAddon> = lazyNativeAddon<ContextParallelAddon>({
  packageRoot: findPackageRoot(import.meta.url, '@attn/context-parallel'),
  requiredFunctions: [
    'getUniqueId',
    'commInitRank',
    'commStatus',
    'commFinalize',
    'sendRecv',
    'merge',
    'accumulate',
    'convert',
    'buildInfo',
  ],
});

/** The loaded addon, or ATTN_CP_TRANSPORT saying why there is none. */
export function requireAddon(): ContextParallelAddon {
  const load = addonLoad();
  if (!load.ok)
    throw cpError('ATTN_CP_TRANSPORT', `@attn/context-parallel's NCCL addon: ${load.reason}${loaderHint(load.reason)}`);
  return load.addon;
}

/**
 * When the addon is built but the dynamic loader found no libnccl.so.2 (an addon built on another machine, or
 * against a copy since removed): the copies the loader does not search, and how to use one. '' otherwise.
 */
export function loaderHint(reason: string, report: () => NcclReport = findNccl): string {
  if (!/libnccl\.so\.2: cannot open shared object/.test(reason)) return '';
  const folders = [...new Set(report().pythonCopies.map((c) => dirname(c.path)))];
  return folders.length > 0
    ? ` The loader does not search ${folders.join(', ')}: start node with LD_LIBRARY_PATH set to one of them, or ` +
        'rebuild the addon here (its RUNPATH then names the copy the build found).'
    : ' No Python copy of NCCL was found either: set LD_LIBRARY_PATH to a folder with libnccl.so.2, or install ' +
        'nvidia-nccl-cu13 with pip and rebuild the addon.';
}
