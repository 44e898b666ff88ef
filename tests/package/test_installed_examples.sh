#!/usr/bin/env bash
# The installed package as an outside project uses it: `cmake --install` of this build into
# a fresh prefix, then examples/cpp configured with find_package(homodyne) from that prefix
# alone (outside the source tree) by a project that enables C++ only, built, and run (the
# fit at 1 and 2 ranks, the sampling at 2, the fit of an APS file at 2).
# Arguments: BUILD_DIR SOURCE_DIR MPIEXEC
set -euo pipefail
build=$1 source=$2 mpiexec=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cmake --install "$build" --prefix "$tmp/prefix" > "$tmp/install.log"
for f in include/homodyne/homodyne.h lib/cmake/homodyne/homodyneConfig.cmake \
         lib/cmake/homodyne/homodyneConfigVersion.cmake bin/homodyne bin/homodyne-plot; do
  [ -e "$tmp/prefix/$f" ] || { echo "not installed: $f"; exit 1; }
done
ls "$tmp/prefix"/lib*/libhomodyne.so* > /dev/null
# The PETSc module (loaded on demand, found beside the library or the executables).
ls "$tmp/prefix"/lib*/homodyne/libhomodyne_petsc.so > /dev/null
# ... and the installed homodyne finds the installed module (PETSc options start PETSc).
PETSC_OPTIONS=-no_signal_handler LD_DEBUG=files LD_DEBUG_OUTPUT="$tmp/ld" \
  "$tmp/prefix/bin/homodyne" --version > /dev/null
grep -q "file=$tmp/prefix/lib[^ ]*/homodyne/libhomodyne_petsc.so" "$tmp"/ld.* ||
  { echo "the installed homodyne did not load the installed PETSc module"; exit 1; }
# The public headers stand alone: none includes a header that is not installed.
if grep -rhn '#include "' "$tmp/prefix/include/homodyne" | grep -v '"homodyne/'; then
  echo "a public header includes an internal one"; exit 1
fi

# A copy of the examples outside the source tree, configured against the prefix only. The
# project enables CXX alone: the package must not need the C language (FindMPI's C part).
cp -r "$source/examples/cpp" "$tmp/examples"
grep -Eq '^project\([a-z_]+ LANGUAGES CXX\)' "$tmp/examples/CMakeLists.txt" ||
  { echo "examples/cpp is not a CXX-only project"; exit 1; }
cmake -S "$tmp/examples" -B "$tmp/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" \
      -DCMAKE_BUILD_TYPE=Release > "$tmp/configure.log" || { cat "$tmp/configure.log"; exit 1; }
cmake --build "$tmp/build" -j 2 > "$tmp/build.log" || { cat "$tmp/build.log"; exit 1; }
if ldd "$tmp/build/fit_in_memory" | grep -q "$build"; then
  echo "the example links the build tree's library, not the installed one"; exit 1
fi

"$tmp/build/evaluate_model"
"$mpiexec" -n 1 "$tmp/build/fit_in_memory"
"$mpiexec" -n 2 --oversubscribe "$tmp/build/fit_in_memory"
"$mpiexec" -n 2 --oversubscribe "$tmp/build/sample_in_memory"
"$mpiexec" -n 2 --oversubscribe "$tmp/build/fit_aps_file" \
  "$source/examples/data/bnl_twotime_350.h5" 1.0 | tee "$tmp/aps.log"
grep -q '^status converged, quality ' "$tmp/aps.log" || { echo "fit_aps_file: no converged fit"; exit 1; }
echo "installed package: examples built and passed"
