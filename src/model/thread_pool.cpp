#include "homodyne/model/thread_pool.h"

#include "homodyne/error.h"

namespace homodyne::model {

ThreadPool::ThreadPool(int threads) {
  if (threads < 1) ThrowBadInput("the model kernel needs at least one thread", {}, "threads");
  workers_.reserve(static_cast<size_t>(threads - 1));
  for (int w = 0; w < threads - 1; ++w) workers_.emplace_back([this] { WorkerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& worker : workers_) worker.join();
}

// Must be called with mutex_ held; returns with it held. Takes indices one at a time
// until none are left. A throwing task cancels the remaining indices.
void ThreadPool::RunTasks() {
  while (next_ < n_tasks_) {
    const int index = next_++;
    const auto* task = task_;
    mutex_.unlock();
    std::exception_ptr failure;
    try {
      (*task)(index);
    } catch (...) {
      failure = std::current_exception();
    }
    mutex_.lock();
    if (failure) {
      if (!error_) error_ = failure;
      next_ = n_tasks_;
    }
  }
}

void ThreadPool::WorkerLoop() {
  std::uint64_t seen = 0;
  std::unique_lock lock(mutex_);
  while (true) {
    wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
    if (stop_) return;
    seen = generation_;
    ++busy_;
    RunTasks();  // the unique_lock still owns the (held) mutex
    if (--busy_ == 0) done_.notify_all();
  }
}

void ThreadPool::ParallelFor(int n_tasks, const std::function<void(int)>& task) {
  if (n_tasks <= 0) return;
  std::unique_lock lock(mutex_);
  task_ = &task;
  n_tasks_ = n_tasks;
  next_ = 0;
  error_ = nullptr;
  ++generation_;
  wake_.notify_all();
  ++busy_;
  RunTasks();
  --busy_;
  // Late workers find next_ ≥ n_tasks_ and never touch task_ again.
  done_.wait(lock, [&] { return busy_ == 0; });
  task_ = nullptr;
  if (error_) {
    auto error = error_;
    error_ = nullptr;
    std::rethrow_exception(error);
  }
}

}  // namespace homodyne::model
