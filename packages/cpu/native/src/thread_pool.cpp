#include "thread_pool.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace attn_cpu {
namespace {

constexpr int kMaxThreads = 1024;

struct Job {
  TaskFn fn;
  void* ctx;
  int64_t n;
  int max_helpers;                // pool threads allowed besides the caller
  std::atomic<int64_t> next{0};   // kSingle: next unclaimed task; kRanges: tasks claimed so far
  std::atomic<bool> stop{false};  // a task threw: skip what is left
  int helpers = 0;                // pool threads inside run(); guarded by Pool::mu
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
      cv_work_.notify_all();
    }
    run_tasks(job);
    if (job.max_helpers > 0) {
      std::unique_lock<std::mutex> lk(mu_);
      // No new helper can join once the job is off the list; wait for those inside it.
      jobs_.erase(std::find(jobs_.begin(), jobs_.end(), &job));
      cv_done_.wait(lk, [&] { return job.helpers == 0; });
    }
    if (job.error) std::rethrow_exception(job.error);
  }

  int size() {
    std::lock_guard<std::mutex> lk(mu_);
    return static_cast<int>(threads_);
  }

 private:
  // Starts pool threads until there are k of them. Holds mu_.
  void grow(int k) {
    while (threads_ < static_cast<size_t>(k)) {
      std::thread([this] { loop(); }).detach();  // the pool lives as long as the process
      ++threads_;
    }
  }

  Job* pick() {
    for (Job* j : jobs_) {
      if (j->helpers < j->max_helpers && j->next.load(std::memory_order_relaxed) < j->n) return j;
    }
    return nullptr;
  }

  void loop() {
    std::unique_lock<std::mutex> lk(mu_);
    for (;;) {
      Job* job = nullptr;
      cv_work_.wait(lk, [&] { return (job = pick()) != nullptr; });
      ++job->helpers;
      lk.unlock();
      run_tasks(*job);
      lk.lock();
      if (--job->helpers == 0) cv_done_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_work_, cv_done_;
  std::vector<Job*> jobs_;
  size_t threads_ = 0;
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
