// Mutated versions of the master test config are either accepted or rejected with a
// bad-input homodyne::Error; no other exception escapes the reader.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "config/config_reader.h"
#include "core/errors.h"
#include "test_data.h"

namespace homodyne::config {
namespace {

std::vector<std::string> Lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string Join(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

// Returns "ok", "bad input" or a description of an unexpected failure.
std::string Outcome(const std::string& text) {
  try {
    ReadConfigString(text, "mutant.yaml");
    return "ok";
  } catch (const Error& e) {
    return e.kind() == ErrorKind::kBadInput ? "bad input" : std::string("wrong kind: ") + e.what();
  } catch (const std::exception& e) {
    return std::string("foreign exception: ") + e.what();
  }
}

TEST(ConfigRobustness, MutatedMasterConfigNeverEscapesAsForeignException) {
  const auto lines = Lines(testing::TestDataPath("configs/master.yaml"));
  ASSERT_GT(lines.size(), 100u);
  int rejected = 0;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::size_t colon = lines[i].find(": ");
    std::vector<std::string> variants;
    auto dropped = lines;
    dropped.erase(dropped.begin() + static_cast<std::ptrdiff_t>(i));
    variants.push_back(Join(dropped));
    if (colon != std::string::npos && lines[i].find('#') != 0) {
      for (const char* replacement : {"{x: 1}", "null", "[1, two]", "-7"}) {
        auto mutated = lines;
        mutated[i] = lines[i].substr(0, colon + 2) + replacement;
        variants.push_back(Join(mutated));
      }
    }
    for (const auto& text : variants) {
      const std::string outcome = Outcome(text);
      if (outcome == "bad input") {
        ++rejected;
      } else {
        EXPECT_EQ(outcome, "ok") << "line " << i + 1 << ": " << lines[i];
      }
    }
  }
  EXPECT_GT(rejected, 300);  // most mutations must be caught
}

}  // namespace
}  // namespace homodyne::config
