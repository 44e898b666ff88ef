#include "io/read_crash_guard.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define HOMODYNE_READ_CRASH_GUARD 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define HOMODYNE_READ_CRASH_GUARD 0
#endif
#endif
#ifndef HOMODYNE_READ_CRASH_GUARD
#define HOMODYNE_READ_CRASH_GUARD 1
#endif

namespace homodyne::io {
namespace {

// The innermost guard's message, written by the handler as it is (write() and _exit() are
// async-signal-safe; nothing is formatted in the handler).
char g_message[1024];
int g_length = 0;
int g_depth = 0;
struct sigaction g_old_segv, g_old_bus;

extern "C" void OnReadCrash(int) {
  if (g_length > 0) {
    const ssize_t ignored = write(STDERR_FILENO, g_message, static_cast<size_t>(g_length));
    (void)ignored;
  }
  _exit(2);
}

}  // namespace

ReadCrashGuard::ReadCrashGuard(std::string_view file, std::string_view what) {
  static_assert(sizeof(previous_) == sizeof(g_message));
  std::memcpy(previous_, g_message, sizeof(g_message));
  previous_length_ = g_length;
  const std::string text = fmt::format(
      "error: {}: the HDF5 library crashed while reading {}: the file is corrupt in a way "
      "libhdf5 does not detect (check it with h5dump -H, or export it again)\n",
      file, what);
  g_length = static_cast<int>(std::min(text.size(), sizeof(g_message)));
  std::memcpy(g_message, text.data(), static_cast<size_t>(g_length));
  if (HOMODYNE_READ_CRASH_GUARD && g_depth++ == 0) {
    struct sigaction action {};
    action.sa_handler = OnReadCrash;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_NODEFER;
    sigaction(SIGSEGV, &action, &g_old_segv);
    sigaction(SIGBUS, &action, &g_old_bus);
  }
}

ReadCrashGuard::~ReadCrashGuard() {
  if (HOMODYNE_READ_CRASH_GUARD && --g_depth == 0) {
    sigaction(SIGSEGV, &g_old_segv, nullptr);
    sigaction(SIGBUS, &g_old_bus, nullptr);
  }
  std::memcpy(g_message, previous_, sizeof(g_message));
  g_length = previous_length_;
}

}  // namespace homodyne::io
