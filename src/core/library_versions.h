// Version of homodyne-hpc and of the libraries it was built and runs with.
#pragma once

#include <string>
#include <string_view>

#include "homodyne/version.h"

namespace homodyne {

struct LibraryVersions {
  std::string homodyne;
  std::string mpi;    // MPI_Get_library_version (first line) + MPI standard version
  std::string petsc;  // PetscGetVersion
  std::string hdf5;   // H5get_libversion
  bool hdf5_parallel = false;
  std::string yaml_cpp;  // from the CMake package found at build time
  std::string hwloc;     // hwloc_get_api_version
  std::string fmt;
  std::string compiler;
  std::string build_type;
};

// Queries the libraries at run time where they allow it. Needs MPI initialised for
// the MPI line; PETSc's version is available without PetscInitialize.
LibraryVersions QueryLibraryVersions();

// The block printed by `homodyne --version`.
std::string FormatVersionReport(const LibraryVersions& versions);

}  // namespace homodyne
