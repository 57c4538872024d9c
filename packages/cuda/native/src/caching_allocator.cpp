#include "caching_allocator.h"

#include <algorithm>
#include <string>

#include "attn/cuda_check.h"
#include "device_guard.h"
#include "errors.h"
#include "format.h"
#include "size_classes.h"

namespace attn {

CachingAllocator& CachingAllocator::instance() {
  // Never destroyed: freeing device memory from a static destructor races the driver's own teardown
  // at process exit, and the OS reclaims the memory anyway.
  static CachingAllocator* allocator = new CachingAllocator();
  return *allocator;
}

CachingAllocator::DeviceState& CachingAllocator::state_locked(int device) { return devices_[device]; }

void CachingAllocator::update_peaks(MemoryStats& s) {
  s.peak_allocated_bytes = std::max(s.peak_allocated_bytes, s.allocated_bytes);
  s.peak_reserved_bytes = std::max(s.peak_reserved_bytes, s.reserved_bytes);
}

void* CachingAllocator::allocate(int device, std::size_t bytes, gpuStream_t stream) {
  if (bytes == 0) return nullptr;
  if (bytes > kMaxRequestBytes) {
    throw InvalidArgument("cannot allocate " + std::to_string(bytes) + " bytes: larger than any device",
                          "ATTN_BAD_SIZE");
  }
  const std::size_t size = size_class(bytes);
  std::lock_guard<std::mutex> lock(mu_);
  DeviceState& st = state_locked(device);
  ++st.stats.alloc_requests;
  const bool in_capture = st.capture_pool != 0;
  // gpuEventQuery is illegal while capturing: pending frees wait for the capture to end.
  if (!in_capture) process_pending_locked(st);
  const int pool = in_capture && stream == st.capture_stream ? st.capture_pool : 0;

  Block key{device, nullptr, size, 0, stream, pool, {}};
  Block* block = nullptr;
  auto it = st.pool.lower_bound(&key);
  if (it != st.pool.end() && (*it)->pool == pool && (*it)->stream == stream && (*it)->size == size) {
    block = *it;
    st.pool.erase(it);
    --st.stats.cached_blocks;
    ++st.stats.cache_hits;
  } else {
    void* ptr = device_malloc_locked(st, device, size, bytes);
    block = new Block{device, ptr, size, 0, stream, pool, {}};
  }
  block->requested = bytes;
  st.live[reinterpret_cast<std::uintptr_t>(block->ptr)] = block;
  st.stats.allocated_bytes += size;
  st.stats.requested_bytes += bytes;
  ++st.stats.active_blocks;
  update_peaks(st.stats);
  return block->ptr;
}

void* CachingAllocator::device_malloc_locked(DeviceState& st, int device, std::size_t size, std::size_t bytes) {
  DeviceGuard guard(device);
  void* ptr = nullptr;
  const bool in_capture = st.capture_pool != 0;
  gpuError_t err;
  if (in_capture) {
    // A gpuMalloc is not captured: the address it returns is the graph's at every replay. The relaxed
    // mode lets this thread call it while its capture (thread-local mode) is underway.
    gpuStreamCaptureMode mode = gpuStreamCaptureModeRelaxed;
    ATTN_CUDA_CHECK(gpuThreadExchangeStreamCaptureMode(&mode));
    err = gpuMalloc(&ptr, size);
    ATTN_CUDA_CHECK(gpuThreadExchangeStreamCaptureMode(&mode));
  } else {
    err = gpuMalloc(&ptr, size);
  }
  if (err == gpuErrorMemoryAllocation) {
    (void)gpuGetLastError();  // an allocation failure is not sticky; do not leave it for launch checks
    // Releasing the cache syncs the device and calls gpuFree, which would break a capture.
    if (!in_capture) {
      ++st.stats.cache_flushes;
      release_cache_locked(st, device);
      err = gpuMalloc(&ptr, size);
    }
    if (err == gpuErrorMemoryAllocation) {
      (void)gpuGetLastError();
      ++st.stats.ooms;
      std::size_t device_free = 0, device_total = 0;
      if (gpuMemGetInfo(&device_free, &device_total) != gpuSuccess) (void)gpuGetLastError();
      const MemoryStats& s = st.stats;
      const std::string message =
          std::string(ATTN_GPU_PLATFORM) + " out of memory on device " + std::to_string(device) +
          ": tried to allocate " + format_bytes(bytes) + " (" + std::to_string(bytes) + " bytes, size class " +
          std::to_string(size) + "). The device has " + format_bytes(device_free) + " free of " +
          format_bytes(device_total) + "; attn's allocator holds " + format_bytes(s.reserved_bytes) + " reserved, " +
          format_bytes(s.allocated_bytes) + " in " + std::to_string(s.active_blocks) + " live block(s), " +
          std::to_string(s.cached_blocks) +
          (in_capture
               ? " cached block(s); the cache is not released during graph capture. Capture with more free memory"
               : " cached block(s) after releasing the cache.") +
          " Dispose tensors you no longer need, or use smaller inputs.";
      throw OutOfMemory(message, device, bytes, s, device_free, device_total);
    }
  }
  ATTN_CUDA_CHECK(err);
  ++st.stats.device_mallocs;
  st.stats.reserved_bytes += size;
  update_peaks(st.stats);
  return ptr;
}

void CachingAllocator::release_cache_locked(DeviceState& st, int device) {
  DeviceGuard guard(device);
  // Pending frees complete once the device is idle; then every cached block is safe to give back.
  ATTN_CUDA_CHECK(gpuDeviceSynchronize());
  process_pending_locked(st);
  // Blocks of graph-private pools (ordered after the general cache) stay: their graphs own the addresses.
  while (!st.pool.empty() && (*st.pool.begin())->pool == 0) {
    Block* block = *st.pool.begin();
    ATTN_CUDA_CHECK(gpuFree(block->ptr));
    st.pool.erase(st.pool.begin());
    --st.stats.cached_blocks;
    st.stats.reserved_bytes -= block->size;
    ++st.stats.device_frees;
    delete block;
  }
  for (gpuEvent_t ev : st.spare_events) (void)gpuEventDestroy(ev);
  st.spare_events.clear();
}

void CachingAllocator::process_pending_locked(DeviceState& st) {
  for (auto it = st.pending.begin(); it != st.pending.end();) {
    bool done = true;
    for (gpuEvent_t ev : it->events) {
      const gpuError_t err = gpuEventQuery(ev);
      if (err == gpuErrorNotReady) {
        (void)gpuGetLastError();
        done = false;
        break;
      }
      ATTN_CUDA_CHECK(err);
    }
    if (!done) {
      ++it;
      continue;
    }
    for (gpuEvent_t ev : it->events) st.spare_events.push_back(ev);
    st.pool.insert(it->block);
    --st.stats.pending_free_blocks;
    ++st.stats.cached_blocks;
    it = st.pending.erase(it);
  }
}

gpuEvent_t CachingAllocator::take_event_locked(DeviceState& st) {
  if (!st.spare_events.empty()) {
    gpuEvent_t ev = st.spare_events.back();
    st.spare_events.pop_back();
    return ev;
  }
  gpuEvent_t ev = nullptr;
  ATTN_CUDA_CHECK(gpuEventCreateWithFlags(&ev, gpuEventDisableTiming));
  return ev;
}

CachingAllocator::Block* CachingAllocator::find_live_locked(DeviceState& st, const void* ptr, const char* what) {
  auto it = st.live.find(reinterpret_cast<std::uintptr_t>(ptr));
  if (it == st.live.end()) {
    throw InvalidArgument(std::string(what) + ": " + format_pointer(ptr) +
                              " is not the start of a live block of this allocator (freed twice, or not "
                              "allocated by attn)",
                          "ATTN_BAD_POINTER");
  }
  return it->second;
}

void CachingAllocator::free(int device, void* ptr) {
  if (ptr == nullptr) return;  // zero-byte allocations
  std::lock_guard<std::mutex> lock(mu_);
  DeviceState& st = state_locked(device);
  Block* block = find_live_locked(st, ptr, "free");
  st.live.erase(reinterpret_cast<std::uintptr_t>(ptr));
  ++st.stats.free_requests;
  st.stats.allocated_bytes -= block->size;
  st.stats.requested_bytes -= block->requested;
  --st.stats.active_blocks;
  block->requested = 0;
  if (st.capture_pool != 0) {
    if (block->pool != st.capture_pool) {
      // Allocated outside this capture: captured work may read it at every replay.
      st.held.emplace_back(st.capture_pool, block);
      ++st.stats.pending_free_blocks;
      return;
    }
    // Later allocations of this capture run after its users at every replay too (stream order).
    block->used_on.clear();
    st.pool.insert(block);
    ++st.stats.cached_blocks;
    return;
  }
  return_block_locked(st, device, block);
}

void CachingAllocator::return_block_locked(DeviceState& st, int device, Block* block) {
  if (block->used_on.empty()) {
    // Stream-ordered: later work on block->stream runs after everything that used the block.
    st.pool.insert(block);
    ++st.stats.cached_blocks;
    return;
  }
  DeviceGuard guard(device);
  // If recording throws (a sticky device error), the block is in neither the cache nor the pending
  // list: it stays reserved and is never handed out while a stream might still use it.
  PendingFree pending{block, {}};
  for (gpuStream_t s : block->used_on) {
    gpuEvent_t ev = take_event_locked(st);
    pending.events.push_back(ev);
    ATTN_CUDA_CHECK(gpuEventRecord(ev, s));
  }
  block->used_on.clear();
  st.pending.push_back(std::move(pending));
  ++st.stats.pending_free_blocks;
}

void CachingAllocator::record_stream(int device, void* ptr, gpuStream_t stream) {
  std::lock_guard<std::mutex> lock(mu_);
  DeviceState& st = state_locked(device);
  Block* block = find_live_locked(st, ptr, "recordStream");
  if (stream == block->stream) return;
  if (std::find(block->used_on.begin(), block->used_on.end(), stream) == block->used_on.end()) {
    block->used_on.push_back(stream);
  }
}

void CachingAllocator::check_range(int device, const void* ptr, std::size_t bytes, const char* what) {
  std::lock_guard<std::mutex> lock(mu_);
  DeviceState& st = state_locked(device);
  const auto addr = reinterpret_cast<std::uintptr_t>(ptr);
  auto it = st.live.upper_bound(addr);
  if (it != st.live.begin()) {
    --it;
    const Block* block = it->second;
    const std::uintptr_t start = it->first;
    if (addr >= start && bytes <= block->requested && addr - start <= block->requested - bytes) return;
  }
  throw InvalidArgument(std::string(what) + ": [" + format_pointer(ptr) + ", +" + std::to_string(bytes) +
                            " bytes) is not inside a live buffer of device " + std::to_string(device) +
                            " (disposed, out of bounds, or not allocated by attn)",
                        "ATTN_OUT_OF_BOUNDS");
}

MemoryStats CachingAllocator::stats(int device) {
  std::lock_guard<std::mutex> lock(mu_);
  DeviceState& st = state_locked(device);
  if (st.capture_pool == 0) process_pending_locked(st);
  return st.stats;
}

void CachingAllocator::reset_peak_stats(int device) {
  std::lock_guard<std::mutex> lock(mu_);
  MemoryStats& s = state_locked(device).stats;
  s.peak_allocated_bytes = s.allocated_bytes;
  s.peak_reserved_bytes = s.reserved_bytes;
}

void CachingAllocator::empty_cache(int device) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [index, st] : devices_) {
    if (st.capture_pool != 0 && (device < 0 || device == index)) {
      throw InvalidArgument("emptyCache cannot run while device " + std::to_string(index) +
                                " captures a graph (it waits for the device); call it before or after the capture",
                            "ATTN_GRAPH_CAPTURE_UNSUPPORTED");
    }
  }
  if (device >= 0) {
    auto it = devices_.find(device);
    if (it != devices_.end()) release_cache_locked(it->second, device);
    return;
  }
  for (auto& [index, st] : devices_) release_cache_locked(st, index);
}

void CachingAllocator::retag_stream(int device, gpuStream_t from, gpuStream_t to) {
  std::lock_guard<std::mutex> lock(mu_);
  DeviceState& st = state_locked(device);
  auto retag = [&](Block* b) {
    if (b->stream == from) b->stream = to;
    // `from` has been synchronized: its uses are over.
    b->used_on.erase(std::remove(b->used_on.begin(), b->used_on.end(), from), b->used_on.end());
    b->used_on.erase(std::remove(b->used_on.begin(), b->used_on.end(), b->stream), b->used_on.end());
  };
  for (auto& [addr, block] : st.live) retag(block);
  for (auto& pending : st.pending) retag(pending.block);
  std::vector<Block*> moved;
  for (auto it = st.pool.begin(); it != st.pool.end();) {
    if ((*it)->stream == from) {
      moved.push_back(*it);
      it = st.pool.erase(it);
    } else {
      ++it;
    }
  }
  for (Block* b : moved) {
    b->stream = to;
    st.pool.insert(b);
  }
}

}  // namespace attn

namespace attn {

void CachingAllocator::begin_capture(int device, gpuStream_t stream, int pool) {
  std::lock_guard<std::mutex> lock(mu_);
  DeviceState& st = state_locked(device);
  if (st.capture_pool != 0) {
    throw InvalidArgument("device " + std::to_string(device) + " is already capturing a graph; captures do not nest",
                          "ATTN_GRAPH_NESTED");
  }
  st.capture_pool = pool;
  st.capture_stream = stream;
}

void CachingAllocator::end_capture(int device) {
  std::lock_guard<std::mutex> lock(mu_);
  DeviceState& st = state_locked(device);
  st.capture_pool = 0;
  st.capture_stream = nullptr;
}

bool CachingAllocator::capturing(int device) {
  std::lock_guard<std::mutex> lock(mu_);
  return state_locked(device).capture_pool != 0;
}

void CachingAllocator::release_pool(int device, int pool) {
  std::lock_guard<std::mutex> lock(mu_);
  DeviceState& st = state_locked(device);
  for (auto& [addr, block] : st.live) {
    if (block->pool == pool) block->pool = 0;  // freed into the general cache later
  }
  std::vector<Block*> cached;
  for (auto it = st.pool.begin(); it != st.pool.end();) {
    if ((*it)->pool == pool) {
      cached.push_back(*it);
      it = st.pool.erase(it);
    } else {
      ++it;
    }
  }
  for (Block* b : cached) {
    b->pool = 0;
    st.pool.insert(b);
  }
  for (auto& pending : st.pending) {
    if (pending.block->pool == pool) pending.block->pool = 0;
  }
  for (auto& [holder, block] : st.held) {
    if (block->pool == pool) block->pool = 0;  // held by another capture: general once that one ends
  }
  std::vector<Block*> released;
  for (auto it = st.held.begin(); it != st.held.end();) {
    if (it->first == pool) {
      released.push_back(it->second);
      it = st.held.erase(it);
    } else {
      ++it;
    }
  }
  for (Block* b : released) {
    --st.stats.pending_free_blocks;
    if (b->pool == pool) b->pool = 0;
    // A block of another, still living graph returns to that graph's pool.
    return_block_locked(st, device, b);
  }
}

}  // namespace attn
