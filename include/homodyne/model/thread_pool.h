// A small fixed-size pool of std::threads owned by one object (the model kernel).
//
// ParallelFor(n, task) runs task(0..n−1) on the pool's threads plus the calling thread and
// returns when all are done. Which thread runs which index is not deterministic; callers
// that need reproducible results must write per-index outputs and combine them in order.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace homodyne::model {

class ThreadPool {
 public:
  // `threads` ≥ 1 is the total number of threads that work (threads − 1 are spawned).
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Runs task(index) for every index in [0, n_tasks); blocks until all finished. If a task
  // throws, the remaining indices are skipped and the first exception is rethrown here.
  // Not reentrant: one ParallelFor at a time per pool.
  void ParallelFor(int n_tasks, const std::function<void(int)>& task);

 private:
  void WorkerLoop();
  void RunTasks();

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  const std::function<void(int)>* task_ = nullptr;
  int n_tasks_ = 0;
  int next_ = 0;
  int busy_ = 0;
  std::uint64_t generation_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
};

}  // namespace homodyne::model
