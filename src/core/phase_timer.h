// Named wall-clock timers for the phases of a run (load, fit, write, ...), kept per rank
// and summarised across ranks (min/max/mean) in the run report.
#pragma once

#include <chrono>
#include <map>
#include <string>

namespace homodyne {

class PhaseTimes {
 public:
  void Add(const std::string& phase, double seconds) { seconds_[phase] += seconds; }
  const std::map<std::string, double>& seconds() const { return seconds_; }
  // The seconds of `phase`, 0 when it never ran.
  double Of(const std::string& phase) const {
    const auto it = seconds_.find(phase);
    return it == seconds_.end() ? 0.0 : it->second;
  }

  // Adds the time from construction to destruction to `phase`.
  class Scope {
   public:
    Scope(PhaseTimes& times, std::string phase)
        : times_(times), phase_(std::move(phase)), start_(std::chrono::steady_clock::now()) {}
    ~Scope() {
      times_.Add(phase_,
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
    }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    PhaseTimes& times_;
    std::string phase_;
    std::chrono::steady_clock::time_point start_;
  };

 private:
  std::map<std::string, double> seconds_;
};

}  // namespace homodyne
