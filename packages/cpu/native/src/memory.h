// Aligned buffers for the kernels. Compiled once (baseline flags) so that SIMD translation units
// share no inline allocation code.
#pragma once
#include <cstddef>

namespace attn_cpu {

constexpr size_t kAlign = 64;

// 64-byte aligned; throws std::bad_alloc.
void* aligned_bytes(size_t bytes);
void free_aligned(void* p);

// A per-thread scratch area of at least `bytes`, 64-byte aligned, contents undefined. Valid until
// the next call on the same thread; a task takes it once and carves it up.
void* thread_scratch(size_t bytes);

// A second per-thread area whose contents survive between tasks and calls: what a thread keeps
// while its tasks stay on one head (its own packed K/V). *fresh is set when the area is new or
// moved (its contents are then undefined).
void* thread_keep_area(size_t bytes, bool* fresh);

// Large per-call buffers (packed K/V, converted rows) are recycled per calling thread: a fresh
// multi-megabyte allocation is fresh pages from the kernel, and faulting them in costs as much as
// packing into them. take_call_buffer returns a cached block of at least `bytes` (or a new one);
// give_call_buffer keeps it for the next call on this thread if it is not too large.
void* take_call_buffer(size_t bytes, size_t* capacity);
void give_call_buffer(void* p, size_t capacity);

// The L2 cache of the core running the caller, in bytes, as the OS reports it (Linux: sysconf, which reads
// /sys), or 1 MiB where it reports none. Read once per process. For sizing working sets only.
size_t l2_cache_bytes();

// Owns one aligned allocation of n elements of T (T trivially constructible; not initialized).
template <class T>
class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(size_t n) : p_(n ? static_cast<T*>(aligned_bytes(n * sizeof(T))) : nullptr) {}
  ~Buffer() { free_aligned(p_); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  T* get() const { return p_; }

 private:
  T* p_ = nullptr;
};

// A Buffer-like view of a recycled call buffer (see take_call_buffer).
template <class T>
class CallBuffer {
 public:
  explicit CallBuffer(size_t n) : p_(n ? static_cast<T*>(take_call_buffer(n * sizeof(T), &cap_)) : nullptr) {}
  ~CallBuffer() {
    if (p_) give_call_buffer(p_, cap_);
  }
  CallBuffer(const CallBuffer&) = delete;
  CallBuffer& operator=(const CallBuffer&) = delete;
  T* get() const { return p_; }

 private:
  size_t cap_ = 0;
  T* p_ = nullptr;
};

// Faults in, with one system call, the whole pages inside [begin, end) that the caller is about to
// write (Linux MADV_POPULATE_WRITE: contents unchanged); a no-op where the system lacks it. Output
// buffers are fresh pages at every call (allocated by the caller), and first-touch faults one page at
// a time measured 20-30 us each on a shared EPYC VM (about half of an fp32 forward's CPU time there).
void prefault_for_write(void* begin, void* end);

// Rounds n up to a multiple of m.
constexpr size_t round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }

}  // namespace attn_cpu
