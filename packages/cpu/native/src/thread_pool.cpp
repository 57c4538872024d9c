#include "thread_pool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <sched.h>
#endif
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace attn_cpu {
namespace {

constexpr int kMaxThreads = 1024;

// How long an idle pool thread, and a caller waiting for its helpers, polls before sleeping on a
// condition variable. A futex wake-up costs a few to tens of microseconds per thread, and a call that
// wakes 15 sleeping threads pays it in series on the pool mutex; back-to-back calls (a model's layers,
// a bench loop) find the threads still polling. OpenMP runtimes poll the same way (OMP_WAIT_POLICY).
constexpr auto kPollFor = std::chrono::microseconds(300);

// Processors this process may run on: polling is only worth it while every polling thread has one.
int usable_cpus() {
#if defined(__linux__)
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return CPU_COUNT(&set);
#endif
  const unsigned n = std::thread::hardware_concurrency();
  return n ? static_cast<int>(n) : 1;
}

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

// Polls until done() holds or kPollFor has passed; true when done() held.
template <class Done>
bool poll(const Done& done) {
  const auto until = std::chrono::steady_clock::now() + kPollFor;
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (done()) return true;
      cpu_relax();
    }
    if (std::chrono::steady_clock::now() >= until) return done();
  }
}

struct Job {
  TaskFn fn;
  void* ctx;
  int64_t n;
  int max_helpers;                // pool threads allowed besides the caller
  std::atomic<int64_t> next{0};   // kSingle: next unclaimed task; kRanges: tasks claimed so far
  std::atomic<bool> stop{false};  // a task threw: skip what is left
  // Pool threads inside run(): changed only under Pool::mu; read without it by the polling caller.
  // A helper's decrement is its last access to the job (the caller may then return and free it).
  std::atomic<int> helpers{0};
  std::mutex error_mu;
  std::exception_ptr error;
  // kRanges: one (lo << 32 | hi) per participant, and the next participant slot to hand out.
  std::vector<std::atomic<uint64_t>> ranges;
  std::atomic<int> next_slot{0};
};

constexpr uint64_t pack_range(uint64_t lo, uint64_t hi) { return lo << 32 | hi; }

// kRanges: the front task of range r (own), or its back task (steal); false when r is empty.
bool take(std::atomic<uint64_t>& r, bool front, int64_t* t) {
  uint64_t v = r.load(std::memory_order_relaxed);
  for (;;) {
    const uint64_t lo = v >> 32, hi = v & 0xffffffffu;
    if (lo >= hi) return false;
    const uint64_t w = front ? pack_range(lo + 1, hi) : pack_range(lo, hi - 1);
    if (r.compare_exchange_weak(v, w, std::memory_order_relaxed)) {
      *t = static_cast<int64_t>(front ? lo : hi - 1);
      return true;
    }
  }
}

// The next task of participant `slot`: its own range's front, else the back of the fullest range.
bool claim(Job& job, int slot, int64_t* t) {
  if (job.stop.load(std::memory_order_relaxed)) return false;
  if (job.ranges.empty()) {
    *t = job.next.fetch_add(1, std::memory_order_relaxed);
    return *t < job.n;
  }
  const int slots = static_cast<int>(job.ranges.size());
  if (slot < slots && take(job.ranges[slot], true, t)) {
    job.next.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  for (;;) {
    int victim = -1;
    uint64_t most = 0;
    for (int i = 0; i < slots; ++i) {
      const uint64_t v = job.ranges[i].load(std::memory_order_relaxed);
      const uint64_t lo = v >> 32, hi = v & 0xffffffffu;
      if (lo < hi && hi - lo > most) {
        most = hi - lo;
        victim = i;
      }
    }
    if (victim < 0) return false;
    if (take(job.ranges[victim], false, t)) {
      job.next.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
  }
}

void run_tasks(Job& job) {
  const int slot = job.ranges.empty() ? 0 : job.next_slot.fetch_add(1, std::memory_order_relaxed);
  int64_t t;
  while (claim(job, slot, &t)) {
    try {
      job.fn(job.ctx, t);
    } catch (...) {
      std::lock_guard<std::mutex> lk(job.error_mu);
      if (!job.error) job.error = std::current_exception();
      job.stop.store(true, std::memory_order_relaxed);
      job.next.store(job.n, std::memory_order_relaxed);  // pick() sees nothing left
    }
  }
}

class Pool {
 public:
  void run(int64_t n, int threads, TaskFn fn, void* ctx, Claim claim) {
    Job job;
    job.fn = fn;
    job.ctx = ctx;
    job.n = n;
    job.max_helpers = static_cast<int>(std::min<int64_t>(std::min(threads, kMaxThreads) - 1, n - 1));
    if (claim == Claim::kRanges && job.max_helpers > 0 && n <= 0x7fffffff) {
      const int slots = job.max_helpers + 1;
      job.ranges = std::vector<std::atomic<uint64_t>>(static_cast<size_t>(slots));
      for (int i = 0; i < slots; ++i)
        job.ranges[i].store(
            pack_range(static_cast<uint64_t>(n * i / slots), static_cast<uint64_t>(n * (i + 1) / slots)),
            std::memory_order_relaxed);
    }
    if (job.max_helpers > 0) {
      std::lock_guard<std::mutex> lk(mu_);
      grow(job.max_helpers);
      jobs_.push_back(&job);
      posted_.fetch_add(1, std::memory_order_release);
      if (sleeping_ > 0) cv_work_.notify_all();
    }
    run_tasks(job);
    if (job.max_helpers > 0) {
      {
        // No new helper can join once the job is off the list; wait for those inside it.
        std::lock_guard<std::mutex> lk(mu_);
        jobs_.erase(std::find(jobs_.begin(), jobs_.end(), &job));
      }
      const auto idle = [&] { return job.helpers.load(std::memory_order_acquire) == 0; };
      if (!(polling_.load(std::memory_order_relaxed) && poll(idle))) {
        std::unique_lock<std::mutex> lk(mu_);
        cv_done_.wait(lk, idle);
      }
    }
    if (job.error) std::rethrow_exception(job.error);
  }

  int size() {
    std::lock_guard<std::mutex> lk(mu_);
    return static_cast<int>(threads_);
  }

 private:
  // Starts pool threads until there are k of them. Holds mu_.
  // The processors are counted (a syscall) only when the pool grows, not on every call.
  void grow(int k) {
    if (threads_ >= static_cast<size_t>(k)) return;
    while (threads_ < static_cast<size_t>(k)) {
      std::thread([this] { loop(); }).detach();  // the pool lives as long as the process
      ++threads_;
    }
    polling_.store(static_cast<int>(threads_) + 1 <= usable_cpus(), std::memory_order_relaxed);
  }

  Job* pick() {
    for (Job* j : jobs_) {
      const bool room = j->helpers.load(std::memory_order_relaxed) < j->max_helpers;
      if (room && j->next.load(std::memory_order_relaxed) < j->n) return j;
    }
    return nullptr;
  }

  // A pool thread: joins posted jobs; between them polls (kPollFor), then sleeps until a job is posted.
  void loop() {
    std::unique_lock<std::mutex> lk(mu_);
    for (;;) {
      Job* job = pick();
      if (!job && polling_.load(std::memory_order_relaxed)) {
        uint64_t seen = posted_.load(std::memory_order_relaxed);
        lk.unlock();
        // A job posted after `seen` bumps posted_; one this thread cannot join leaves it polling on.
        while (poll([&] { return posted_.load(std::memory_order_acquire) != seen; })) {
          seen = posted_.load(std::memory_order_relaxed);
          lk.lock();
          if ((job = pick()) != nullptr) break;
          lk.unlock();
        }
        if (!job) lk.lock();
      }
      if (!job) {
        // Under mu_ from pick() to the wait: a job posted meanwhile sees sleeping_ > 0 and notifies.
        ++sleeping_;
        cv_work_.wait(lk, [&] { return (job = pick()) != nullptr; });
        --sleeping_;
      }
      job->helpers.fetch_add(1, std::memory_order_relaxed);
      lk.unlock();
      run_tasks(*job);
      lk.lock();
      if (job->helpers.fetch_sub(1, std::memory_order_acq_rel) == 1) cv_done_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_work_, cv_done_;
  std::vector<Job*> jobs_;
  size_t threads_ = 0;
  int sleeping_ = 0;                 // pool threads waiting on cv_work_; guarded by mu_
  std::atomic<uint64_t> posted_{0};  // jobs posted so far: what polling threads watch
  // Poll only while the pool threads and a caller each have a processor of their own (grow() keeps it
  // current): on an oversubscribed machine a polling thread takes the time of one with work.
  std::atomic<bool> polling_{false};
};

// Never destroyed: detached threads may still wait on it while the process exits.
Pool& pool() {
  static Pool* p = new Pool();
  return *p;
}

}  // namespace

void parallel_for(int64_t n, int threads, TaskFn fn, void* ctx, Claim claim) {
  if (n <= 0) return;
  pool().run(n, std::max(threads, 1), fn, ctx, claim);
}

int pool_threads() { return pool().size(); }

}  // namespace attn_cpu
