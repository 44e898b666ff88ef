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

// How dataset `path` of `file` is stored: its chunk shape (empty when not chunked) and the
// ids of its filters, in pipeline order (e.g. H5Z_FILTER_SHUFFLE, H5Z_FILTER_DEFLATE).
struct DatasetLayout {
  std::vector<hsize_t> chunk;
  std::vector<int> filters;
  hsize_t storage_bytes = 0;  // bytes the values take in the file
};
inline DatasetLayout ReadDatasetLayout(const std::string& file, const std::string& path) {
  DatasetLayout out;
  const hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  EXPECT_GE(f, 0) << file;
  const hid_t d = H5Dopen2(f, path.c_str(), H5P_DEFAULT);
  EXPECT_GE(d, 0) << file << ": " << path;
  const hid_t p = H5Dget_create_plist(d);
  if (H5Pget_layout(p) == H5D_CHUNKED) {
    hsize_t chunk[H5S_MAX_RANK];
    const int rank = H5Pget_chunk(p, H5S_MAX_RANK, chunk);
    out.chunk.assign(chunk, chunk + (rank > 0 ? rank : 0));
  }
  const int n = H5Pget_nfilters(p);
  for (int i = 0; i < n; ++i) {
    unsigned flags = 0;
    size_t n_values = 0;
    unsigned config = 0;
    out.filters.push_back(static_cast<int>(H5Pget_filter2(
        p, static_cast<unsigned>(i), &flags, &n_values, nullptr, 0, nullptr, &config)));
  }
  out.storage_bytes = H5Dget_storage_size(d);
  H5Pclose(p);
  H5Dclose(d);
  H5Fclose(f);
  return out;
}

// Whether `file` has a link at `path` (an absolute path of one level, e.g. "/c2_exp").
inline bool DatasetExists(const std::string& file, const std::string& path) {
  const hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  EXPECT_GE(f, 0) << file;
  if (f < 0) return false;
  const bool exists = H5Lexists(f, path.c_str(), H5P_DEFAULT) > 0;
  H5Fclose(f);
  return exists;
}

}  // namespace homodyne::testing
