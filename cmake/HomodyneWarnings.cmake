# Warning flags as an INTERFACE target linked only by homodyne's own targets, so that
# downstream users never inherit them.
add_library(homodyne_warnings INTERFACE)
target_compile_options(homodyne_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wcast-align -Wunused
  -Woverloaded-virtual -Wdouble-promotion -Wformat=2 -Wimplicit-fallthrough
  # Designated initialisers of Options structs leave the other fields at their defaults.
  -Wno-missing-field-initializers)
if(HOMODYNE_WERROR)
  target_compile_options(homodyne_warnings INTERFACE -Werror)
endif()

# Sanitizer build (ASan + UBSan), see CMakePresets.json "asan".
add_library(homodyne_sanitizers INTERFACE)
if(HOMODYNE_SANITIZE)
  target_compile_options(homodyne_sanitizers INTERFACE
    -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  target_link_options(homodyne_sanitizers INTERFACE -fsanitize=address,undefined)
  # GCC 12 reports maybe-uninitialized false positives inside libstdc++ (std::regex,
  # std::function) when instrumented; keep it a warning there.
  target_compile_options(homodyne_sanitizers INTERFACE -Wno-error=maybe-uninitialized)
endif()
