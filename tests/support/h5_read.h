// Whole-dataset reads with the plain HDF5 C API, independent of the library's readers, for
// tests that check what a writer put in a file.
#pragma once

#include <gtest/gtest.h>
#include <hdf5.h>

#include <string>
#include <vector>

namespace homodyne::testing {

// Every value of dataset `path` of `file` as float64; its shape into `dims` when given.
inline std::vector<double> ReadWholeDataset(const std::string& file, const std::string& path,
                                            std::vector<hsize_t>* dims = nullptr) {
  const hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  EXPECT_GE(f, 0) << file;
  const hid_t d = H5Dopen2(f, path.c_str(), H5P_DEFAULT);
  EXPECT_GE(d, 0) << file << ": " << path;
  const hid_t s = H5Dget_space(d);
  if (dims != nullptr) {
    dims->assign(static_cast<std::size_t>(H5Sget_simple_extent_ndims(s)), 0);
    H5Sget_simple_extent_dims(s, dims->data(), nullptr);
  }
  std::vector<double> out(static_cast<std::size_t>(H5Sget_simple_extent_npoints(s)));
  EXPECT_GE(H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()), 0);
  H5Sclose(s);
  H5Dclose(d);
  H5Fclose(f);
  return out;
}

}  // namespace homodyne::testing
