#include "core/output_paths.h"

#include <system_error>

#include <fmt/format.h>

#include "core/errors.h"

namespace homodyne {
namespace {

namespace fs = std::filesystem;

// Absolute, normalised, with the symbolic links of the existing part resolved.
fs::path Resolved(const fs::path& p) {
  std::error_code ec;
  fs::path r = fs::weakly_canonical(fs::absolute(p), ec);
  return ec ? fs::absolute(p).lexically_normal() : r;
}

// Same file: the same resolved path, or (both existing) the same inode.
bool SameFile(const fs::path& a, const fs::path& b) {
  if (Resolved(a) == Resolved(b)) return true;
  std::error_code ec;
  return fs::exists(a, ec) && fs::exists(b, ec) && fs::equivalent(a, b, ec) && !ec;
}

// `inner` is `outer` or lies below it (both resolved).
bool IsInside(const fs::path& inner, const fs::path& outer) {
  const fs::path i = Resolved(inner), o = Resolved(outer);
  auto it = i.begin();
  for (const auto& part : o) {
    if (part.empty()) continue;  // trailing separator
    if (it == i.end() || *it != part) return false;
    ++it;
  }
  return true;
}

}  // namespace

fs::path OutputFilePath(const fs::path& dir, std::string_view name) {
  const fs::path rel(name);
  if (name.empty()) ThrowBadInput("empty output file name", dir.string(), "output file name");
  if (rel.is_absolute() || rel.has_root_name() || rel.has_root_directory()) {
    ThrowBadInput(fmt::format("output file name '{}' is absolute; expected a name relative to "
                              "the output directory",
                              name),
                  dir.string(), "output file name");
  }
  for (const auto& part : rel) {
    if (part == "..") {
      ThrowBadInput(fmt::format("output file name '{}' contains '..'; results must stay inside "
                                "the output directory",
                                name),
                    dir.string(), "output file name");
    }
  }
  return dir / rel;
}

void CheckOutputsSpareInputs(const OutputLayout& layout, const std::vector<std::string>& inputs,
                             std::string_view flag) {
  for (const std::string& input : inputs) {
    if (input.empty()) continue;
    if (SameFile(layout.dir, input)) {
      ThrowBadInput(fmt::format("the output directory {} is this input file", layout.dir.string()),
                    input, std::string(flag));
    }
    for (const std::string& sub : layout.owned_dirs) {
      const fs::path owned = OutputFilePath(layout.dir, sub);
      if (IsInside(input, owned)) {
        ThrowBadInput(fmt::format("refusing to overwrite an input: results are written to {}, "
                                  "which holds this input file; choose another output directory",
                                  owned.string()),
                      input, std::string(flag));
      }
    }
    for (const std::string& name : layout.files) {
      const fs::path file = OutputFilePath(layout.dir, name);
      if (SameFile(file, input)) {
        ThrowBadInput(fmt::format("refusing to overwrite an input: the result file {} is this "
                                  "input file; choose another output directory",
                                  file.string()),
                      input, std::string(flag));
      }
    }
  }
}

}  // namespace homodyne
