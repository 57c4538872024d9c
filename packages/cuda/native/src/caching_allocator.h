// A caching allocator for device memory, in the manner of PyTorch's CUDACachingAllocator, reduced to
// what attn needs:
// - Requests are rounded to size classes (size_classes.h); gpuMalloc is called only on a cache miss.
// - A block belongs to the stream it was allocated on. Freeing it is stream-ordered: it returns to
//   that stream's pool at once and is reused only by later allocations on the same stream, whose work
//   runs after everything already queued there. A block also used on other streams (record_stream)
//   waits for events recorded on those streams before it becomes reusable.
// - When gpuMalloc fails, the cache is released (after a device sync) and the call retried once;
//   a second failure throws OutOfMemory with the allocator's state.
// Thread-safe; one instance per process (shared by worker threads).
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <utility>
#include <unordered_map>
#include <vector>

#include "attn/gpu_api.h"
#include "memory_stats.h"

namespace attn {

class CachingAllocator {
 public:
  static CachingAllocator& instance();

  // A block of at least `bytes` on `device`, usable on `stream`. bytes == 0 gives nullptr.
  void* allocate(int device, std::size_t bytes, gpuStream_t stream);
  // Returns a live block to the cache. Throws InvalidArgument for a pointer it did not hand out.
  void free(int device, void* ptr);
  // Marks a live block as used on another stream: its free then waits for that stream's work.
  void record_stream(int device, void* ptr, gpuStream_t stream);
  // Throws InvalidArgument unless [ptr, ptr + bytes) lies inside one live block of `device`.
  void check_range(int device, const void* ptr, std::size_t bytes, const char* what);

  MemoryStats stats(int device);
  void reset_peak_stats(int device);
  // Frees every cached block (after waiting for the device); device < 0: every device.
  void empty_cache(int device);
  // A stream is being destroyed after a sync: its blocks (live and cached) move to `to`.
  void retag_stream(int device, gpuStream_t from, gpuStream_t to);

  // Graph capture (graphs.cpp), as PyTorch's graph-private memory pools. While `device` captures
  // `stream` into pool `pool` (> 0, one per graph):
  // - allocations on `stream` come from the pool: its cached blocks, else a new gpuMalloc made under
  //   the relaxed capture mode (a gpuMalloc is not captured; the graph owns that address for its life,
  //   and nothing frees it before release_pool). Allocating ahead instead would need every size the
  //   captured calls ask for (split-KV partials depend on the plan) before they run.
  // - a block of the pool freed during the capture may be handed to later allocations of the same
  //   capture: replays run them in the same stream order. A block allocated outside the capture and
  //   freed during it is held until release_pool: captured work may read it at every replay.
  // - blocks of the pool freed after the capture return to the pool, which only this capture ever
  //   allocated from: outputs and scratch stay reserved while the graph lives.
  // - nothing here calls gpuEventQuery, gpuFree or a device sync while capturing (each would break
  //   the capture): pending frees wait, and an allocation that fails is not retried after releasing
  //   the cache.
  void begin_capture(int device, gpuStream_t stream, int pool);
  void end_capture(int device);
  // True while `device` has a capture underway.
  bool capturing(int device);
  // The graph of `pool` is gone and its work has finished (the caller synchronized its streams):
  // the pool's cached and held blocks return to the general cache, and its live blocks will when freed.
  void release_pool(int device, int pool);

 private:
  struct Block {
    int device;
    void* ptr;
    std::size_t size;                  // the size class
    std::size_t requested;             // what the caller asked for (0 while cached)
    gpuStream_t stream;                // the stream it was allocated on
    int pool;                          // 0: the general cache; > 0: the private pool of one graph
    std::vector<gpuStream_t> used_on;  // other streams that used it
  };
  // Cached blocks ordered so that lower_bound finds the first block of (stream, size).
  struct PoolOrder {
    bool operator()(const Block* a, const Block* b) const {
      if (a->pool != b->pool) return a->pool < b->pool;
      if (a->stream != b->stream)
        return reinterpret_cast<std::uintptr_t>(a->stream) < reinterpret_cast<std::uintptr_t>(b->stream);
      if (a->size != b->size) return a->size < b->size;
      return reinterpret_cast<std::uintptr_t>(a->ptr) < reinterpret_cast<std::uintptr_t>(b->ptr);
    }
  };
  struct PendingFree {
    Block* block;
    std::vector<gpuEvent_t> events;
  };
  struct DeviceState {
    std::map<std::uintptr_t, Block*> live;  // by address, for frees and range checks
    std::set<Block*, PoolOrder> pool;       // cached, reusable on their stream (and in their pool)
    std::vector<PendingFree> pending;       // freed, waiting for other streams
    std::vector<gpuEvent_t> spare_events;   // recycled (timing disabled)
    MemoryStats stats;
    int capture_pool = 0;  // > 0 while a capture is underway
    gpuStream_t capture_stream = nullptr;
    std::vector<std::pair<int, Block*>> held;  // (pool, block) freed during that pool's capture
  };

  DeviceState& state_locked(int device);
  void* device_malloc_locked(DeviceState& st, int device, std::size_t size, std::size_t bytes);
  void release_cache_locked(DeviceState& st, int device);
  void process_pending_locked(DeviceState& st);
  // A freed block (no longer live) goes to its pool's cache, or waits for the streams that used it.
  void return_block_locked(DeviceState& st, int device, Block* block);
  gpuEvent_t take_event_locked(DeviceState& st);
  Block* find_live_locked(DeviceState& st, const void* ptr, const char* what);
  void update_peaks(MemoryStats& s);

  std::mutex mu_;
  std::unordered_map<int, DeviceState> devices_;
};

}  // namespace attn
