// Internal: collects validation problems and throws them together as one bad-input error.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace homodyne::config::detail {

struct Problem {
  std::string key;      // concrete key path
  std::string message;  // what is wrong, with the line
};

class ProblemList {
 public:
  void Add(std::string key, std::string message) {
    problems_.push_back({std::move(key), std::move(message)});
  }
  bool empty() const { return problems_.empty(); }
  const std::vector<Problem>& problems() const { return problems_; }

  // Throws homodyne::Error(kBadInput) naming `source` when any problem was recorded:
  // one problem → "source: key: message"; several → a numbered list.
  void ThrowIfAny(const std::string& source) const;

 private:
  std::vector<Problem> problems_;
};

}  // namespace homodyne::config::detail
