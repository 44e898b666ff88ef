// HOMODYNE_API marks what libhomodyne exports: the library is built with hidden symbols
// (-fvisibility=hidden, -fvisibility-inlines-hidden), so only the declarations of
// include/homodyne/ that carry it are visible to a program that links the library.
#pragma once

#if defined(_WIN32)
#define HOMODYNE_API
#else
#define HOMODYNE_API __attribute__((visibility("default")))
#endif
