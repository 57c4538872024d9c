// What memoryStats() reports for one device (the caching allocator's counters).

export interface MemoryStats {
  /** Bytes in live buffers, after size-class rounding. */
  readonly allocatedBytes: number;
  /** Bytes the live buffers were asked for. */
  readonly requestedBytes: number;
  /** Bytes held from the device: live, cached and pending-free blocks. */
  readonly reservedBytes: number;
  readonly peakAllocatedBytes: number;
  readonly peakReservedBytes: number;
  readonly activeBlocks: number;
  /** Freed blocks kept for reuse on their stream. */
  readonly cachedBlocks: number;
  /** Freed blocks waiting for other streams (recordStream) before they can be reused. */
  readonly pendingFreeBlocks: number;
  readonly allocRequests: number;
  readonly freeRequests: number;
  /** Allocations served from the cache without a device allocation. */
  readonly cacheHits: number;
  readonly deviceMallocs: number;
  readonly deviceFrees: number;
  /** Times the cache was released to satisfy an allocation. */
  readonly cacheFlushes: number;
  readonly ooms: number;
  /** Process-wide pinned host memory used to stage host-to-device copies. */
  readonly pinnedHostBytes: number;
}
