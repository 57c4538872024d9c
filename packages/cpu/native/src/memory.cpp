#include "memory.h"

#include <cstdint>
#include <cstdlib>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace attn_cpu {

void* aligned_bytes(size_t bytes) {
  void* p = std::aligned_alloc(kAlign, round_up(bytes ? bytes : 1, kAlign));
  if (!p) throw std::bad_alloc();
  return p;
}

void free_aligned(void* p) { std::free(p); }

void prefault_for_write(void* begin, void* end) {
#if defined(__linux__)
  constexpr uintptr_t kPage = 4096;
  constexpr int kPopulateWrite = 23;  // MADV_POPULATE_WRITE (Linux 5.14); older kernels answer EINVAL
  const uintptr_t lo = (reinterpret_cast<uintptr_t>(begin) + kPage - 1) & ~(kPage - 1);
  const uintptr_t hi = reinterpret_cast<uintptr_t>(end) & ~(kPage - 1);
  // Only pages wholly inside the range (they belong to the caller's buffer); a failure leaves the
  // pages to fault on first write, as without the call.
  if (hi > lo) (void)madvise(reinterpret_cast<void*>(lo), hi - lo, kPopulateWrite);
#else
  (void)begin;
  (void)end;
#endif
}

size_t l2_cache_bytes() {
  static const size_t bytes = [] {
    long n = 0;
#if defined(__linux__) && defined(_SC_LEVEL2_CACHE_SIZE)
    n = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
    return n > 0 ? static_cast<size_t>(n) : size_t{1} << 20;
  }();
  return bytes;
}

namespace {
struct Scratch {
  void* p = nullptr;
  size_t bytes = 0;
  ~Scratch() { std::free(p); }
};
thread_local Scratch tls_scratch;
thread_local Scratch tls_keep;
}  // namespace

void* thread_keep_area(size_t bytes, bool* fresh) {
  Scratch& s = tls_keep;
  *fresh = s.bytes < bytes;
  if (*fresh) {
    std::free(s.p);
    s.p = nullptr;
    s.bytes = 0;
    const size_t want = round_up(bytes, 4096);
    s.p = aligned_bytes(want);
    s.bytes = want;
  }
  return s.p;
}

void* thread_scratch(size_t bytes) {
  Scratch& s = tls_scratch;
  if (s.bytes < bytes) {
    std::free(s.p);
    s.p = nullptr;
    s.bytes = 0;
    // Grow geometrically so that calls of slowly increasing size do not reallocate each time.
    const size_t want = round_up(bytes + bytes / 2, 4096);
    s.p = aligned_bytes(want);
    s.bytes = want;
  }
  return s.p;
}

namespace {
// Up to two cached blocks per thread (a call holds at most two at once), each at most 64 MiB:
// larger calls pay the page faults (small next to their work) rather than pin memory per thread.
constexpr size_t kMaxCached = size_t{64} << 20;
struct CallCache {
  void* p[2] = {nullptr, nullptr};
  size_t cap[2] = {0, 0};
  ~CallCache() {
    std::free(p[0]);
    std::free(p[1]);
  }
};
thread_local CallCache tls_calls;
}  // namespace

void* take_call_buffer(size_t bytes, size_t* capacity) {
  CallCache& c = tls_calls;
  // The smallest cached block that fits.
  int best = -1;
  for (int i = 0; i < 2; ++i)
    if (c.p[i] && c.cap[i] >= bytes && (best < 0 || c.cap[i] < c.cap[best])) best = i;
  if (best >= 0) {
    void* p = c.p[best];
    *capacity = c.cap[best];
    c.p[best] = nullptr;
    c.cap[best] = 0;
    return p;
  }
  const size_t cap = round_up(bytes, 4096);
  void* p = aligned_bytes(cap);
  *capacity = cap;
  return p;
}

void give_call_buffer(void* p, size_t capacity) {
  CallCache& c = tls_calls;
  if (capacity > kMaxCached) {
    std::free(p);
    return;
  }
  // Keep it in a free slot, else in place of the smaller cached block.
  int slot = !c.p[0] ? 0 : !c.p[1] ? 1 : (c.cap[0] <= c.cap[1] ? 0 : 1);
  if (c.p[slot] && c.cap[slot] >= capacity) {
    std::free(p);
    return;
  }
  std::free(c.p[slot]);
  c.p[slot] = p;
  c.cap[slot] = capacity;
}

}  // namespace attn_cpu
