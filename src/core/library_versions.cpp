#include "core/library_versions.h"

#include <hdf5.h>
#include <hwloc.h>
#include <mpi.h>
#include <petscversion.h>  // macros only: PETSc itself is loaded on demand

#include <fmt/format.h>

#include "homodyne_build_config.h"

namespace homodyne {

std::string_view Version() { return HOMODYNE_VERSION_STRING; }

LibraryVersions QueryLibraryVersions() {
  LibraryVersions v;
  v.homodyne = HOMODYNE_VERSION_STRING;

  char mpi_text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  MPI_Get_library_version(mpi_text, &len);
  std::string mpi_lib(mpi_text, static_cast<size_t>(len));
  if (auto cut = mpi_lib.find_first_of(",\n"); cut != std::string::npos) mpi_lib.resize(cut);
  int major = 0;
  int minor = 0;
  MPI_Get_version(&major, &minor);
  v.mpi = fmt::format("{} (MPI standard {}.{})", mpi_lib, major, minor);

  // PetscGetVersion's words, from the headers the PETSc module is built with.
  v.petsc =
      fmt::format("Petsc {} Version {}.{}.{}", PETSC_VERSION_RELEASE ? "Release" : "Development",
                  PETSC_VERSION_MAJOR, PETSC_VERSION_MINOR, PETSC_VERSION_SUBMINOR);

  unsigned h_major = 0;
  unsigned h_minor = 0;
  unsigned h_release = 0;
  H5get_libversion(&h_major, &h_minor, &h_release);
  v.hdf5 = fmt::format("{}.{}.{}", h_major, h_minor, h_release);
#ifdef H5_HAVE_PARALLEL
  v.hdf5_parallel = true;
#endif

  v.yaml_cpp = HOMODYNE_YAML_CPP_VERSION;
  const unsigned api = hwloc_get_api_version();
  v.hwloc =
      fmt::format("{} (API {}.{}.{})", HWLOC_VERSION, api >> 16, (api >> 8) & 0xffu, api & 0xffu);
  v.fmt =
      fmt::format("{}.{}.{}", FMT_VERSION / 10000, (FMT_VERSION / 100) % 100, FMT_VERSION % 100);
  v.compiler = HOMODYNE_CXX_COMPILER;
  v.build_type = HOMODYNE_BUILD_TYPE;
  return v;
}

std::string FormatVersionReport(const LibraryVersions& v) {
  std::string out = fmt::format("homodyne-hpc {}\n", v.homodyne);
  out += fmt::format("  MPI       {}\n", v.mpi);
  out += fmt::format("  PETSc     {} (with TAO)\n", v.petsc);
  out += fmt::format("  HDF5      {} ({})\n", v.hdf5, v.hdf5_parallel ? "parallel" : "serial");
  out += fmt::format("  yaml-cpp  {}\n", v.yaml_cpp);
  out += fmt::format("  hwloc     {}\n", v.hwloc);
  out += fmt::format("  fmt       {}\n", v.fmt);
  out += fmt::format("  compiler  {} ({} build)\n", v.compiler, v.build_type);
  return out;
}

}  // namespace homodyne
