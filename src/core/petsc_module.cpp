#include "core/petsc_module.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/errors.h"
#include "homodyne_build_config.h"

namespace homodyne {
namespace {

std::mutex g_mutex;
void* g_module = nullptr;  // the dlopen handle, kept until the process ends
bool g_started_here = false;

// The module's entry points (src/petsc/module.cpp).
using StartFn = void (*)(const std::vector<std::string>* args, MPI_Comm comm);
using RunningFn = bool (*)();
using StopFn = void (*)();

std::vector<std::string> Candidates() {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  if (const char* env = std::getenv("HOMODYNE_PETSC_MODULE"); env != nullptr && *env != '\0') {
    out.emplace_back(env);
  }
  // The object holding this code (a library, or the executable: dladdr names it by argv[0],
  // so /proc/self/exe too).
  std::vector<fs::path> selves = {"/proc/self/exe"};
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&PetscStarted), &info) != 0 && info.dli_fname != nullptr) {
    selves.insert(selves.begin(), fs::path(info.dli_fname));
  }
  for (const fs::path& object : selves) {
    std::error_code ec;
    const fs::path self = fs::canonical(object, ec);
    if (ec) continue;
    const fs::path dir = self.parent_path();
    out.push_back((dir / "homodyne" / HOMODYNE_PETSC_MODULE_NAME).string());
    out.push_back((dir / ".." / HOMODYNE_INSTALL_LIBDIR / "homodyne" / HOMODYNE_PETSC_MODULE_NAME)
                      .lexically_normal()
                      .string());
  }
  out.emplace_back(HOMODYNE_INSTALL_FULL_LIBDIR "/homodyne/" HOMODYNE_PETSC_MODULE_NAME);
  out.emplace_back(HOMODYNE_PETSC_MODULE_BUILD_PATH);
  return out;
}

void* LoadModuleLocked() {
  if (g_module != nullptr) return g_module;
  std::string tried;
  for (const std::string& path : Candidates()) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) {
      tried += fmt::format("\n  {} (not found)", path);
      continue;
    }
    g_module = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (g_module != nullptr) return g_module;
    const char* why = dlerror();
    tried += fmt::format("\n  {} ({})", path, why != nullptr ? why : "dlopen failed");
  }
  ThrowInternal(fmt::format(
      "PETSc is needed (a TAO local method or PETSc options) but homodyne's PETSc module {} "
      "could not be loaded; set HOMODYNE_PETSC_MODULE to its path. Tried:{}",
      HOMODYNE_PETSC_MODULE_NAME, tried));
}

void* EntryLocked(const char* name) {
  void* module = LoadModuleLocked();
  void* entry = dlsym(module, name);
  if (entry == nullptr) {
    ThrowInternal(fmt::format("homodyne's PETSc module has no entry point {}", name));
  }
  return entry;
}

bool RunningLocked() {
  if (g_module == nullptr) return false;
  return reinterpret_cast<RunningFn>(EntryLocked("homodyne_petsc_running"))();
}

}  // namespace

bool PetscOptionsFromOutside() {
  for (const char* var : {"PETSC_OPTIONS", "PETSC_OPTIONS_YAML"}) {
    const char* value = std::getenv(var);
    if (value != nullptr && *value != '\0') return true;
  }
  std::vector<std::filesystem::path> files = {".petscrc", "petscrc"};
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    files.push_back(std::filesystem::path(home) / ".petscrc");
  }
  for (const auto& f : files) {
    std::error_code ec;
    if (std::filesystem::exists(f, ec)) return true;
  }
  return false;
}

void* PetscModuleEntry(const char* name) {
  std::lock_guard lock(g_mutex);
  return EntryLocked(name);
}

void StartPetsc(const std::vector<std::string>& args, MPI_Comm comm) {
  std::lock_guard lock(g_mutex);
  if (RunningLocked()) return;
  reinterpret_cast<StartFn>(EntryLocked("homodyne_petsc_start"))(&args, comm);
  g_started_here = true;
}

void EnsurePetscStarted() {
  std::lock_guard lock(g_mutex);
  if (RunningLocked()) return;
  const std::vector<std::string> none;
  reinterpret_cast<StartFn>(EntryLocked("homodyne_petsc_start"))(&none, MPI_COMM_SELF);
  g_started_here = true;
}

bool PetscStarted() {
  std::lock_guard lock(g_mutex);
  return RunningLocked();
}

void StopPetsc() {
  std::lock_guard lock(g_mutex);
  if (!g_started_here || !RunningLocked()) return;
  reinterpret_cast<StopFn>(EntryLocked("homodyne_petsc_stop"))();
  g_started_here = false;
}

}  // namespace homodyne
