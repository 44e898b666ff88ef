// ceres_peer.cpp - homodyne-hpc's reference peer: the homodyne c2 model (static /
// laminar_flow) fitted directly with Ceres Solver's Levenberg-Marquardt, written as a
// C++ specialist would, so that whole-job timings have a strong baseline.
//
// Same fit problem as bench/peers/peers_common.py (grid "upper"):
//   data     config YAML -> APS old / APS-U HDF5 (q selection, frame slice) -> half-matrix
//            reconstruction -> diagonal correction -> phi normalised to (-180, 180] ->
//            t=0 row/column dropped -> analysis grid t = dt, 2dt, ..., (N-1)dt
//   params   [contrast_0..n-1, offset_0..n-1, D0, alpha, D_offset(, gamma_dot_t0, beta,
//            gamma_dot_t_offset, phi0)] with the config's bounds
//   residual r = (c2_exp - c2_model) / 0.01 over the upper triangle (i < j) of every angle,
//            angle-major, row-major inside an angle
//   chi2     2 * sum r^2 (homodyne's full-matrix convention), reduced chi2 = chi2 /
//            (n_phi * n_t^2 - n_params)
//
// Ceres formulation: one residual block per (angle k, row i) of the upper triangle
// (n_t-1-i residuals), parameter blocks [physical (3 or 7), scaling_k = (contrast_k,
// offset_k)].  Analytic Jacobian (ceres::CostFunction).  Everything that does not depend
// on the angle (rates D(t), gamma_dot(t), their trapezoid prefix sums, the per-pair
// integrals, g1_diffusion and their derivatives w.r.t. the rate parameters) is computed once
// per evaluation point in a ceres::EvaluationCallback and shared by all residual blocks;
// a block only does the angle-dependent part (sinc^2 of the shear phase, contrast/offset).
// --jac autodiff replaces the blocks by self-contained DynamicAutoDiffCostFunctions (no
// shared state, each row recomputes the rates and prefix sums with Jets); it is the
// cross-check of the analytic Jacobian and a slower textbook alternative.
//
// Output: one JSON line on stdout (last line), like the Python peers.
// See README.md for build/run instructions.

#include <ceres/ceres.h>
#include <ceres/dynamic_autodiff_cost_function.h>
#include <ceres/version.h>
#include <glog/logging.h>
#include <hdf5.h>
#include <sched.h>
#include <sys/resource.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#ifndef CERES_PEER_FLAGS
#define CERES_PEER_FLAGS "unknown"
#endif

namespace fs = std::filesystem;

namespace {

// ------------------------------------------------------------------ model constants
// (the homodyne reference model, spec section 1.4)
constexpr double kSigma = 0.01;
constexpr double kRateFloor = 1e-10;
constexpr double kSmoothAbsEps = 1e-12;
constexpr double kLogG1Min = -700.0;
constexpr double kG1Floor = 1e-10;
constexpr double kSincTaylor = 1e-4;
constexpr double kSincDivEps = 1e-12;
constexpr double kTimeFloorMin = 1e-8;
constexpr double kDeg2Rad = M_PI / 180.0;  // numpy.deg2rad: x * (pi / 180)

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}
const Clock::time_point kProcessStart = Clock::now();

[[noreturn]] void die(const std::string& msg) {
  std::fprintf(stderr, "ceres_peer: %s\n", msg.c_str());
  std::exit(2);
}

const std::vector<std::string> kPhysStatic = {"D0", "alpha", "D_offset"};
const std::vector<std::string> kPhysLaminar = {
    "D0", "alpha", "D_offset", "gamma_dot_t0", "beta", "gamma_dot_t_offset", "phi0"};

// ------------------------------------------------------------------ config (YAML)
struct Bounds {
  double lo, hi;
};

struct Config {
  std::string path, mode, data_file, per_angle_mode;
  bool laminar = true;
  double dt = 0, q_cfg = 0.0054, L = 2e6, q_tol_frac = 0.1;
  int start_frame = 1, end_frame = -1;
  std::map<std::string, Bounds> bounds;
};

// n[key] if n is a map holding key with a non-null value (Python: d.get(key) is not None)
std::optional<YAML::Node> get(const YAML::Node& n, const char* key) {
  if (!n || !n.IsMap()) return std::nullopt;
  const YAML::Node c = n[key];
  if (!c.IsDefined() || c.IsNull()) return std::nullopt;
  return c;
}
YAML::Node get_map(const YAML::Node& n, const char* key) {  // (d.get(key, {}) or {})
  auto c = get(n, key);
  return c ? *c : YAML::Node(YAML::NodeType::Map);
}

Config load_config(const std::string& path) {
  YAML::Node y;
  try {
    y = YAML::LoadFile(path);
  } catch (const std::exception& e) {
    die("config " + path + ": " + e.what());
  }
  Config c;
  c.path = fs::absolute(path).lexically_normal().string();
  c.mode = get(y, "analysis_mode") ? get(y, "analysis_mode")->as<std::string>() : "static";
  std::transform(c.mode.begin(), c.mode.end(), c.mode.begin(), ::tolower);
  c.laminar =
      !(c.mode == "static" || c.mode == "static_isotropic" || c.mode == "static_anisotropic");
  const YAML::Node ap = get_map(y, "analyzer_parameters");
  const YAML::Node ed = get_map(y, "experimental_data");
  if (auto v = get(ap, "dt"))
    c.dt = v->as<double>();
  else if (auto w = get(ed, "dt"))
    c.dt = w->as<double>();
  else
    die("config: analyzer_parameters.dt missing");
  if (auto v = get(get_map(ap, "scattering"), "wavevector_q")) c.q_cfg = v->as<double>();
  if (auto v = get(get_map(ap, "geometry"), "stator_rotor_gap")) {
    c.L = v->as<double>();
  } else if (auto w = get(get_map(ed, "geometry"), "stator_rotor_gap")) {
    c.L = w->as<double>();
  } else if (auto u = get(ed, "sample_detector_distance")) {
    c.L = u->as<double>();
  }
  std::string folder =
      get(ed, "data_folder_path") ? get(ed, "data_folder_path")->as<std::string>() : "";
  auto name = get(ed, "data_file_name");
  if (!name) die("config: experimental_data.data_file_name missing");
  fs::path fp(folder);
  if (!fp.is_absolute()) fp = fs::absolute(path).parent_path() / fp;
  c.data_file = (fp / name->as<std::string>()).string();
  c.bounds = {{"D0", {1e2, 1e5}},        {"alpha", {-2.0, 2.0}},
              {"D_offset", {-1e5, 1e5}}, {"gamma_dot_t0", {1e-6, 0.5}},
              {"beta", {-2.0, 2.0}},     {"gamma_dot_t_offset", {-0.1, 0.1}},
              {"phi0", {-10.0, 10.0}},   {"contrast", {0.0, 1.0}},
              {"offset", {0.5, 1.5}}};
  if (auto b = get(get_map(y, "parameter_space"), "bounds")) {
    for (const auto& e : *b)
      c.bounds[e["name"].as<std::string>()] = {e["min"].as<double>(), e["max"].as<double>()};
  }
  const YAML::Node pf = get_map(y, "phi_filtering");
  if (get(pf, "enabled") && get(pf, "enabled")->as<bool>()) {
    auto tr = get(pf, "target_ranges");
    if (tr && tr->size() > 0)
      die("config: phi_filtering with target_ranges is not implemented by the peers");
  }
  c.per_angle_mode = "individual";
  if (auto v = get(get_map(get_map(get_map(y, "optimization"), "nlsq"), "anti_degeneracy"),
                   "per_angle_mode"))
    c.per_angle_mode = v->as<std::string>();
  if (auto v = get(ap, "start_frame")) c.start_frame = v->as<int>();
  if (auto v = get(ap, "end_frame")) c.end_frame = v->as<int>();
  if (auto v = get(y, "q_tolerance_fraction")) c.q_tol_frac = v->as<double>();
  return c;
}

// ------------------------------------------------------------------ HDF5 (C API)
struct H5Handle {  // closes whatever hid_t it holds
  hid_t id;
  herr_t (*close)(hid_t);
  ~H5Handle() {
    if (id >= 0) close(id);
  }
};

bool h5_exists(hid_t f, const std::string& path) {
  size_t pos = 0;
  while (true) {
    pos = path.find('/', pos + 1);
    const std::string sub = path.substr(0, pos);
    if (H5Lexists(f, sub.c_str(), H5P_DEFAULT) <= 0) return false;
    if (pos == std::string::npos) return true;
  }
}

template <typename T>
std::vector<T> h5_read(hid_t loc, const std::string& path, hid_t memtype,
                       std::vector<hsize_t>* dims = nullptr) {
  H5Handle d{H5Dopen2(loc, path.c_str(), H5P_DEFAULT), H5Dclose};
  if (d.id < 0) die("HDF5: cannot open dataset " + path);
  H5Handle s{H5Dget_space(d.id), H5Sclose};
  const int nd = H5Sget_simple_extent_ndims(s.id);
  std::vector<hsize_t> dd(std::max(nd, 0));
  if (nd > 0) H5Sget_simple_extent_dims(s.id, dd.data(), nullptr);
  size_t n = 1;
  for (auto v : dd) n *= v;
  std::vector<T> out(n);
  if (n && H5Dread(d.id, memtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()) < 0)
    die("HDF5: cannot read " + path);
  if (dims) *dims = dd;
  return out;
}

// link names of a group in increasing name order (h5py's Group.keys() order)
std::vector<std::string> h5_names(hid_t f, const std::string& path) {
  H5Handle g{H5Gopen2(f, path.c_str(), H5P_DEFAULT), H5Gclose};
  if (g.id < 0) die("HDF5: cannot open group " + path);
  H5G_info_t info;
  H5Gget_info(g.id, &info);
  std::vector<std::string> names;
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    const ssize_t len =
        H5Lget_name_by_idx(g.id, ".", H5_INDEX_NAME, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
    std::string s(static_cast<size_t>(len), '\0');
    H5Lget_name_by_idx(g.id, ".", H5_INDEX_NAME, H5_ITER_INC, i, s.data(), len + 1, H5P_DEFAULT);
    names.push_back(s);
  }
  return names;
}

// ------------------------------------------------------------------ prepared data
struct Data {
  int n_phi = 0, n_frames = 0, n_t = 0;
  size_t n_pairs = 0;          // n_t (n_t - 1) / 2 per angle
  std::vector<double> t, phi;  // analysis grid (t=0 dropped), phi in (-180, 180]
  double q = 0, L = 0, dt = 0;
  std::vector<double> y;     // upper-triangle data, angle-major (n_phi * n_pairs)
  std::vector<double> diag;  // corrected diagonal (not part of the fit), n_phi*n_t
  std::string layout;
};

double np_mod(double a, double b) {  // numpy.mod for floats (sign of the divisor)
  double m = std::fmod(a, b);
  if (m != 0.0) {
    if ((b < 0) != (m < 0)) m += b;
  } else {
    m = std::copysign(0.0, b);
  }
  return m;
}

Data load_data(const Config& cfg) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  H5Handle f{H5Fopen(cfg.data_file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose};
  if (f.id < 0) die("cannot open HDF5 file " + cfg.data_file);
  Data D;
  std::vector<std::string> keys;  // datasets (full paths) of the selected angles
  std::vector<double> phi;
  if (h5_exists(f.id, "xpcs/qmap/dynamic_v_list_dim0") &&
      h5_exists(f.id, "xpcs/twotime/correlation_map")) {  // APS-U
    D.layout = "aps_u";
    const auto qv = h5_read<double>(f.id, "xpcs/qmap/dynamic_v_list_dim0", H5T_NATIVE_DOUBLE);
    const auto pv = h5_read<double>(f.id, "xpcs/qmap/dynamic_v_list_dim1", H5T_NATIVE_DOUBLE);
    const auto bins = h5_read<long long>(f.id, "xpcs/twotime/processed_bins", H5T_NATIVE_LLONG);
    auto names = h5_names(f.id, "xpcs/twotime/correlation_map");
    std::sort(names.begin(), names.end());
    struct Pair {
      std::string key;
      double q, phi;
    };
    std::vector<Pair> pairs;
    const long long npv = static_cast<long long>(pv.size());
    for (size_t i = 0; i < std::min(names.size(), bins.size()); ++i) {
      const long long b0 = bins[i] - 1;
      long long qi = b0 / npv, pi = b0 % npv;  // Python floor division / modulo
      if (pi < 0) {
        pi += npv;
        qi -= 1;
      }
      if (qi >= 0 && qi < static_cast<long long>(qv.size()) && pi >= 0 && pi < npv)
        pairs.push_back({names[i], qv[qi], pv[pi]});
    }
    if (pairs.empty()) die("APS-U file: no usable processed_bins");
    size_t best = 0;
    for (size_t i = 1; i < pairs.size(); ++i)
      if (std::fabs(pairs[i].q - cfg.q_cfg) < std::fabs(pairs[best].q - cfg.q_cfg)) best = i;
    const double q_sel = pairs[best].q;
    std::vector<Pair> keep;
    for (const auto& p : pairs)
      if (std::fabs(p.q - q_sel) < 1e-10) keep.push_back(p);
    if (keep.empty()) keep.push_back(pairs[0]);
    for (const auto& p : keep) {
      keys.push_back("xpcs/twotime/correlation_map/" + p.key);
      phi.push_back(p.phi);
    }
    D.q = keep[0].q;
  } else if (h5_exists(f.id, "xpcs/dqlist") && h5_exists(f.id, "exchange/C2T_all")) {  // APS old
    D.layout = "aps_old";
    std::vector<hsize_t> dq_dims, dp_dims;
    auto dq = h5_read<double>(f.id, "xpcs/dqlist", H5T_NATIVE_DOUBLE, &dq_dims);
    auto dp = h5_read<double>(f.id, "xpcs/dphilist", H5T_NATIVE_DOUBLE, &dp_dims);
    if (dq_dims.size() >= 2) dq.resize(dq_dims.back());  // [0] of a (1, n) array
    if (dp_dims.size() >= 2) dp.resize(dp_dims.back());
    const auto names = h5_names(f.id, "exchange/C2T_all");
    size_t best = 0;
    for (size_t i = 1; i < dq.size(); ++i)
      if (std::fabs(dq[i] - cfg.q_cfg) < std::fabs(dq[best] - cfg.q_cfg)) best = i;
    const double q_sel = dq[best];
    std::vector<size_t> sel;
    for (size_t i = 0; i < dq.size(); ++i)
      if (std::fabs(dq[i] - q_sel) <= cfg.q_tol_frac * q_sel) sel.push_back(i);
    if (sel.size() < 5) {
      std::vector<size_t> order(dq.size());
      for (size_t i = 0; i < order.size(); ++i) order[i] = i;
      std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        return std::fabs(dq[a] - q_sel) < std::fabs(dq[b] - q_sel);
      });
      order.resize(std::min<size_t>(10, dq.size()));
      sel = order;
    }
    for (size_t i : sel) {
      if (i >= names.size()) die("APS old file: fewer C2T_all datasets than dqlist entries");
      keys.push_back("exchange/C2T_all/" + names[i]);
      phi.push_back(dp[i]);
    }
    D.q = dq[sel[0]];
  } else {
    die(cfg.data_file + ": unknown HDF5 layout");
  }

  D.n_phi = static_cast<int>(keys.size());
  D.L = cfg.L;
  D.dt = cfg.dt;
  for (double p : phi) {
    double m = np_mod(p, 360.0);
    D.phi.push_back(m > 180.0 ? m - 360.0 : m);
  }
  for (int k = 0; k < D.n_phi; ++k) {
    std::vector<hsize_t> dims;
    const auto h = h5_read<double>(f.id, keys[k], H5T_NATIVE_DOUBLE, &dims);
    if (dims.size() != 2 || dims[0] != dims[1]) die(keys[k] + ": not a square matrix");
    const int F = static_cast<int>(dims[0]);
    const int s = std::max(cfg.start_frame, 1);
    const int e = cfg.end_frame < 0 ? F : std::min(cfg.end_frame, F);
    const int n = e - s + 1;
    if (k == 0) {
      if (n < 3) die("fewer than 3 frames selected");
      D.n_frames = n;
      D.n_t = n - 1;
      D.n_pairs = static_cast<size_t>(D.n_t) * (D.n_t - 1) / 2;
      D.y.reserve(D.n_pairs * D.n_phi);
    } else if (n != D.n_frames) {
      die("angles with different frame counts");
    }
    // full = H + H^T with the diagonal halved, on the frame slice [s-1, e)
    auto H = [&](int a, int b) { return h[static_cast<size_t>(s - 1 + a) * F + (s - 1 + b)]; };
    auto full = [&](int a, int b) {
      return a == b ? (H(a, a) + H(a, a)) / 2.0 : H(a, b) + H(b, a);
    };
    // basic diagonal correction (diagonal := mean of the symmetrised first off-diagonal)
    std::vector<double> sb(n - 1), dg(n);
    for (int i = 0; i < n - 1; ++i) sb[i] = 0.5 * (full(i, i + 1) + full(i + 1, i));
    dg[0] = sb[0];
    dg[n - 1] = sb[n - 2];
    for (int i = 1; i < n - 1; ++i) dg[i] = 0.5 * (sb[i - 1] + sb[i]);
    for (int i = 1; i < n; ++i) D.diag.push_back(dg[i]);
    // analysis grid = frames 1..n-1 of the slice; upper triangle, row-major
    for (int i = 1; i < n; ++i)
      for (int j = i + 1; j < n; ++j) D.y.push_back(full(i, j));
  }
  // numpy.linspace(0, dt*(N-1), N)[1:]
  const int N = D.n_frames;
  const double stop = cfg.dt * static_cast<double>(N - 1);
  const double step = stop / static_cast<double>(N - 1);
  for (int k = 1; k < N; ++k)
    D.t.push_back(k == N - 1 ? stop : static_cast<double>(k) * step + 0.0);
  return D;
}

// ------------------------------------------------------------------ shared model state
// Angle-independent part of the model at the current evaluation point, recomputed by
// Ceres' EvaluationCallback before the residual blocks are evaluated.
class SharedModel final : public ceres::EvaluationCallback {
 public:
  SharedModel(const Data& d, bool laminar, const double* phys_user)
      : n_t(d.n_t),
        n_phys(laminar ? 7 : 3),
        laminar(laminar),
        n_pairs(d.n_pairs),
        phys_user_(phys_user) {
    const double dt = d.dt, q = d.q, L = d.L;
    wq = 0.5 * q * q * dt;               // "wavevector_q_squared_half_dt"
    sinc_pre = 0.5 / M_PI * q * L * dt;  // q L dt / (2 pi)
    const int k = std::min(1, n_t - 1);
    const double half = 0.5 * std::fabs(d.t[k] - d.t[0]);
    const double eps = half > kTimeFloorMin ? half : kTimeFloorMin;
    tsafe.resize(n_t);
    logt.resize(n_t);
    for (int m = 0; m < n_t; ++m) {
      tsafe[m] = d.t[m] > eps ? d.t[m] : eps;
      logt[m] = std::log(tsafe[m]);
    }
    row_start.resize(n_t);
    size_t acc = 0;
    for (int i = 0; i < n_t; ++i) {
      row_start[i] = acc;
      acc += static_cast<size_t>(n_t - 1 - i);
    }
    g1d.resize(n_pairs);
    dg1d.resize(3 * n_pairs);
    if (laminar) {
      IG.resize(n_pairs);
      dIG.resize(3 * n_pairs);
    }
    fD.resize(n_t);
    fG.resize(n_t);
    CD.resize(n_t);
    CG.resize(n_t);
    dfD.resize(3 * n_t);
    dfG.resize(3 * n_t);
    dCD.resize(3 * n_t);
    dCG.resize(3 * n_t);
  }

  void PrepareForEvaluation(bool evaluate_jacobians, bool new_evaluation_point) override {
    ++n_prepare;
    if (new_evaluation_point) have_val_ = have_jac_ = false;
    if (evaluate_jacobians ? have_jac_ : have_val_) return;
    Compute(phys_user_, evaluate_jacobians);
    have_val_ = true;
    have_jac_ = evaluate_jacobians;
  }

  // true if the residual blocks see the parameters the shared state was computed from
  bool Matches(const double* p) const {
    for (int c = 0; c < n_phys; ++c)
      if (p[c] != p_used[c]) return false;
    return true;
  }

  void Compute(const double* p, bool jac) {
    ++n_compute;
    for (int c = 0; c < n_phys; ++c) p_used[c] = p[c];
    Rate(p[0], p[1], p[2], fD, dfD, CD, dCD, jac);
    if (laminar) Rate(p[3], p[4], p[5], fG, dfG, CG, dCG, jac);
    const double mwq = -wq;
    for (int i = 0; i < n_t - 1; ++i) {
      size_t q = row_start[i];
      for (int j = i + 1; j < n_t; ++j, ++q) {
        const double d = CD[i] - CD[j];
        const double I = std::sqrt(d * d + kSmoothAbsEps);
        const double x = mwq * I;
        const double xc = std::min(std::max(x, kLogG1Min), 0.0);  // np.clip
        const double g = std::exp(xc);
        g1d[q] = g;
        if (jac) {
          const double fac = (x >= kLogG1Min && x <= 0.0) ? g * mwq * (d / I) : 0.0;
          for (int c = 0; c < 3; ++c) dg1d[3 * q + c] = fac * (dCD[3 * i + c] - dCD[3 * j + c]);
        }
        if (laminar) {
          const double e = CG[i] - CG[j];
          const double J = std::sqrt(e * e + kSmoothAbsEps);
          IG[q] = J;
          if (jac) {
            const double fac = e / J;
            for (int c = 0; c < 3; ++c) dIG[3 * q + c] = fac * (dCG[3 * i + c] - dCG[3 * j + c]);
          }
        }
      }
    }
  }

  // per-pair state read by the residual blocks
  const int n_t, n_phys;
  const bool laminar;
  const size_t n_pairs;
  double wq = 0, sinc_pre = 0;
  std::vector<double> tsafe, logt;
  std::vector<size_t> row_start;
  std::vector<double> g1d, dg1d, IG, dIG;  // dg1d, dIG: 3 per pair (amp, exponent, offset)
  double p_used[7] = {0, 0, 0, 0, 0, 0, 0};
  long n_prepare = 0, n_compute = 0;
  mutable std::atomic<long> n_mismatch{0};

 private:
  // f(t) = amp t^expo + off floored at 1e-10, trapezoid prefix C[k] = sum_{m<k} (f_m+f_{m+1})/2
  void Rate(double amp, double expo, double off, std::vector<double>& f, std::vector<double>& df,
            std::vector<double>& C, std::vector<double>& dC, bool jac) const {
    for (int m = 0; m < n_t; ++m) {
      const double tp = std::pow(tsafe[m], expo);
      const double v = amp * tp + off;
      const bool ok = v > kRateFloor;
      f[m] = ok ? v : kRateFloor;
      if (jac) {
        df[3 * m + 0] = ok ? tp : 0.0;
        df[3 * m + 1] = ok ? amp * tp * logt[m] : 0.0;
        df[3 * m + 2] = ok ? 1.0 : 0.0;
      }
    }
    C[0] = 0.0;
    for (int m = 1; m < n_t; ++m) C[m] = C[m - 1] + 0.5 * (f[m - 1] + f[m]);
    if (jac) {
      dC[0] = dC[1] = dC[2] = 0.0;
      for (int m = 1; m < n_t; ++m)
        for (int c = 0; c < 3; ++c)
          dC[3 * m + c] = dC[3 * (m - 1) + c] + 0.5 * (df[3 * (m - 1) + c] + df[3 * m + c]);
    }
  }

  const double* phys_user_;
  bool have_val_ = false, have_jac_ = false;
  std::vector<double> fD, fG, CD, CG, dfD, dfG, dCD, dCG;
};

// ------------------------------------------------------------------ analytic row block
class RowCost final : public ceres::CostFunction {
 public:
  RowCost(const SharedModel* S, const double* y, int row, double phi_deg)
      : S_(S), y_(y), row_(row), phi_(phi_deg) {
    set_num_residuals(S->n_t - 1 - row);
    mutable_parameter_block_sizes()->push_back(S->n_phys);
    mutable_parameter_block_sizes()->push_back(2);
  }

  bool Evaluate(double const* const* prm, double* r, double** J) const override {
    const double* p = prm[0];
    if (!S_->Matches(p)) {  // Ceres did not announce this point through the callback
      S_->n_mismatch.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    const double con = prm[1][0], off = prm[1][1];
    const int n = num_residuals();
    const size_t q0 = S_->row_start[row_];
    const double* g1d = S_->g1d.data() + q0;
    double* J0 = (J && J[0]) ? J[0] : nullptr;
    double* J1 = (J && J[1]) ? J[1] : nullptr;
    constexpr double ms = -1.0 / kSigma;
    if (!S_->laminar) {
      const double* dg = S_->dg1d.data() + 3 * q0;
      for (int c = 0; c < n; ++c) {
        double g1 = g1d[c];
        const bool fl = !(g1 > kG1Floor);
        if (fl) g1 = kG1Floor;
        r[c] = (y_[c] - (off + con * g1 * g1)) / kSigma;
        if (J0) {
          const double a = fl ? 0.0 : ms * 2.0 * con * g1;
          for (int k = 0; k < 3; ++k) J0[3 * c + k] = a * dg[3 * c + k];
        }
        if (J1) {
          J1[2 * c] = ms * g1 * g1;
          J1[2 * c + 1] = ms;
        }
      }
      return true;
    }
    const double ang = (p[6] - phi_) * kDeg2Rad;
    const double cos_t = std::cos(ang);
    const double pre = S_->sinc_pre * cos_t;
    const double* IG = S_->IG.data() + q0;
    if (!J0 && !J1) {  // residuals only
      for (int c = 0; c < n; ++c) {
        const double x = pre * IG[c];
        double s;
        if (std::fabs(x) < kSincTaylor) {
          const double x2 = x * x;
          s = 1.0 - x2 / 6.0 + x2 * x2 / 120.0;
        } else {
          s = std::sin(x) / (std::fabs(x) > kSincDivEps ? x : 1.0);
        }
        double g1 = g1d[c] * (s * s);
        if (!(g1 > kG1Floor)) g1 = kG1Floor;
        r[c] = (y_[c] - (off + con * g1 * g1)) / kSigma;
      }
      return true;
    }
    const double dpre = S_->sinc_pre * (-std::sin(ang)) * kDeg2Rad;  // d pre / d phi0
    const double* dg = S_->dg1d.data() + 3 * q0;
    const double* dI = S_->dIG.data() + 3 * q0;
    for (int c = 0; c < n; ++c) {
      const double x = pre * IG[c];
      double s, ds;
      if (std::fabs(x) < kSincTaylor) {
        const double x2 = x * x;
        s = 1.0 - x2 / 6.0 + x2 * x2 / 120.0;
        ds = x * (-1.0 / 3.0 + x2 / 30.0);
      } else {
        const double sn = std::sin(x), cs = std::cos(x);
        s = sn / x;
        ds = (cs - s) / x;
      }
      const double ss = s * s;
      double g1 = g1d[c] * ss;
      const bool fl = !(g1 > kG1Floor);
      if (fl) g1 = kG1Floor;
      r[c] = (y_[c] - (off + con * g1 * g1)) / kSigma;
      if (J0) {
        double* Jr = J0 + 7 * c;
        if (fl) {
          for (int k = 0; k < 7; ++k) Jr[k] = 0.0;
        } else {
          const double a = ms * 2.0 * con * g1;        // d r / d g1
          const double b = a * g1d[c] * 2.0 * s * ds;  // d r / d phase
          Jr[0] = a * ss * dg[3 * c + 0];
          Jr[1] = a * ss * dg[3 * c + 1];
          Jr[2] = a * ss * dg[3 * c + 2];
          Jr[3] = b * pre * dI[3 * c + 0];
          Jr[4] = b * pre * dI[3 * c + 1];
          Jr[5] = b * pre * dI[3 * c + 2];
          Jr[6] = b * dpre * IG[c];
        }
      }
      if (J1) {
        J1[2 * c] = ms * g1 * g1;
        J1[2 * c + 1] = ms;
      }
    }
    return true;
  }

 private:
  const SharedModel* S_;
  const double* y_;
  int row_;
  double phi_;
};

// ------------------------------------------------------------------ autodiff row block
inline double val(double x) { return x; }
template <typename T, int N>
inline T val(const ceres::Jet<T, N>& x) {
  return x.a;
}

struct RowFunctor {  // self-contained: recomputes rates and prefix sums for its row
  const SharedModel* S;
  const double* y;
  int row;
  double phi;
  int n_res;
  template <typename T>
  bool operator()(T const* const* prm, T* res) const {
    using std::cos;
    using std::exp;
    using std::pow;
    using std::sin;
    using std::sqrt;
    const T* p = prm[0];
    const T con = prm[1][0], off = prm[1][1];
    const int n = S->n_t;
    auto prefix = [&](const T& amp, const T& expo, const T& o, std::vector<T>& C) {
      C.resize(n);
      T prev(0.0);
      for (int m = 0; m < n; ++m) {
        T v = amp * pow(S->tsafe[m], expo) + o;
        if (!(val(v) > kRateFloor)) v = T(kRateFloor);
        C[m] = m == 0 ? T(0.0) : C[m - 1] + 0.5 * (prev + v);
        prev = v;
      }
    };
    std::vector<T> CD, CG;
    prefix(p[0], p[1], p[2], CD);
    T pre(0.0);
    if (S->laminar) {
      prefix(p[3], p[4], p[5], CG);
      pre = S->sinc_pre * cos((p[6] - phi) * kDeg2Rad);
    }
    const double mwq = -S->wq;
    for (int c = 0; c < n_res; ++c) {
      const int j = row + 1 + c;
      const T d = CD[row] - CD[j];
      T x = mwq * sqrt(d * d + kSmoothAbsEps);
      if (val(x) < kLogG1Min) x = T(kLogG1Min);
      if (val(x) > 0.0) x = T(0.0);
      T g1 = exp(x);
      if (S->laminar) {
        const T e = CG[row] - CG[j];
        const T ph = pre * sqrt(e * e + kSmoothAbsEps);
        T s;
        if (std::fabs(val(ph)) < kSincTaylor) {
          const T x2 = ph * ph;
          s = 1.0 - x2 / 6.0 + x2 * x2 / 120.0;
        } else {
          s = sin(ph) / ph;
        }
        g1 = g1 * (s * s);
      }
      if (!(val(g1) > kG1Floor)) g1 = T(kG1Floor);
      res[c] = (y[c] - (off + con * g1 * g1)) / kSigma;
    }
    return true;
  }
};

// ------------------------------------------------------------------ small helpers
std::string jnum(double v) {
  if (!std::isfinite(v)) return "null";
  char b[40];
  std::snprintf(b, sizeof b, "%.17g", v);
  return b;
}
std::string jstr(const std::string& s) {
  std::string o = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') {
      o += '\\';
      o += ch;
    } else if (static_cast<unsigned char>(ch) < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", ch);
      o += b;
    } else {
      o += ch;
    }
  }
  return o + "\"";
}
std::string jarr(const std::vector<double>& v) {
  std::string o = "[";
  for (size_t i = 0; i < v.size(); ++i) o += (i ? ", " : "") + jnum(v[i]);
  return o + "]";
}

double percentile(std::vector<double> v, double pct) {  // numpy.percentile, method "linear"
  std::sort(v.begin(), v.end());
  const double n = static_cast<double>(v.size());
  const double q = pct / 100.0;
  double vi = n * q + (1.0 + q * (1.0 - 1.0 - 1.0)) - 1.0;
  vi = std::min(std::max(vi, 0.0), n - 1.0);
  const double prev = std::floor(vi);
  const size_t a = static_cast<size_t>(prev), b = std::min(a + 1, v.size() - 1);
  const double g = vi - prev, diff = v[b] - v[a];
  return g >= 0.5 ? v[b] - diff * (1.0 - g) : v[a] + diff * g;
}

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) {
      auto p = line.find(':');
      std::string s = line.substr(p + 1);
      s.erase(0, s.find_first_not_of(" \t"));
      return s;
    }
  return "unknown";
}
int ncpu_affinity() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return -1;
  return CPU_COUNT(&set);
}
double peak_rss_mib() {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss / 1024.0;
}
std::string timestamp() {
  char b[64];
  std::time_t t = std::time(nullptr);
  std::strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%S%z", std::localtime(&t));
  return b;
}

void usage() {
  std::fprintf(stderr,
               R"(usage: ceres_peer CONFIG.yaml [options]
  --x0 truth|mid|default|file:PATH   start point (default: default = homodyne's
                           hard-coded start, contrast/offset from the data; truth needs
                           <data>.truth.json; file: a vector in the homodyne layout)
  --threads N              Ceres num_threads (default 2)
  --max-iter K             max LM iterations (default 200)
  --tol T                  function/parameter/gradient tolerance (default 1e-10)
  --linear-solver S        dense_schur (default) | dense_qr | dense_normal_cholesky |
                           sparse_normal_cholesky | sparse_schur | iterative_schur
  --jac analytic|autodiff  analytic Jacobian with shared per-pair state (default) or
                           per-row DynamicAutoDiffCostFunction (self-contained, slower)
  --label L                dataset label copied into the JSON
  --bounds-line-search N   Solver::Options::max_num_line_search_step_size_iterations
                           (Ceres default 20: with bounds, a projected line search along
                           every trust-region step, one extra Jacobian each); 0 = off
  --verbose                Ceres progress to stdout and the full report to stderr
  validation (no fit):
  --eval-x FILE            parameter vector (homodyne layout, whitespace separated); write
  --eval-out PREFIX        PREFIX.y.bin, PREFIX.r.bin (float64) and, with --eval-jac,
  --eval-jac               PREFIX.J.bin (row-major m x n, homodyne column order)
)");
}

}  // namespace

int main(int argc, char** argv) {
  FLAGS_logtostderr = true;  // glog: no log files under /tmp
  google::InitGoogleLogging(argv[0]);
  std::string config_path, x0_kind = "default", lin = "dense_schur", jac = "analytic", label;
  std::string eval_x, eval_out;
  bool eval_jac = false, verbose = false;
  int threads = 2, max_iter = 200, bounds_ls = -1;
  double tol = 1e-10;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        usage();
        die("missing value for " + a);
      }
      return argv[++i];
    };
    if (a == "--x0")
      x0_kind = next();
    else if (a == "--threads")
      threads = std::stoi(next());
    else if (a == "--max-iter")
      max_iter = std::stoi(next());
    else if (a == "--tol")
      tol = std::stod(next());
    else if (a == "--linear-solver")
      lin = next();
    else if (a == "--jac")
      jac = next();
    else if (a == "--label")
      label = next();
    else if (a == "--verbose")
      verbose = true;
    else if (a == "--bounds-line-search")
      bounds_ls = std::stoi(next());
    else if (a == "--eval-x")
      eval_x = next();
    else if (a == "--eval-out")
      eval_out = next();
    else if (a == "--eval-jac")
      eval_jac = true;
    else if (a == "--grid") {
      if (next() != "upper") die("only --grid upper is implemented");
    } else if (a == "-h" || a == "--help") {
      usage();
      return 0;
    } else if (!a.empty() && a[0] == '-') {
      usage();
      die("unknown option " + a);
    } else {
      config_path = a;
    }
  }
  if (config_path.empty()) {
    usage();
    return 2;
  }
  if (jac != "analytic" && jac != "autodiff") die("--jac must be analytic or autodiff");

  // ---------------------------------------------------------------- load
  const auto t0 = Clock::now();
  const Config cfg = load_config(config_path);
  const Data D = load_data(cfg);
  const double t_data = seconds_since(t0);
  const int n_phi = D.n_phi, n_t = D.n_t;
  const auto& phys_names = cfg.laminar ? kPhysLaminar : kPhysStatic;
  const int n_phys = static_cast<int>(phys_names.size());
  const int n_params = 2 * n_phi + n_phys;
  std::vector<std::string> names;
  std::vector<double> lb, ub;
  for (int k = 0; k < n_phi; ++k) {
    names.push_back("contrast_" + std::to_string(k));
    lb.push_back(cfg.bounds.at("contrast").lo);
    ub.push_back(cfg.bounds.at("contrast").hi);
  }
  for (int k = 0; k < n_phi; ++k) {
    names.push_back("offset_" + std::to_string(k));
    lb.push_back(cfg.bounds.at("offset").lo);
    ub.push_back(cfg.bounds.at("offset").hi);
  }
  for (const auto& p : phys_names) {
    names.push_back(p);
    lb.push_back(cfg.bounds.at(p).lo);
    ub.push_back(cfg.bounds.at(p).hi);
  }

  // truth (<data>.truth.json, read with yaml-cpp: JSON is YAML)
  const std::string truth_path =
      (fs::path(cfg.data_file).replace_extension("").string()) + ".truth.json";
  std::optional<YAML::Node> truth;
  if (fs::exists(truth_path)) truth = YAML::LoadFile(truth_path);
  auto per_angle = [&](const YAML::Node& n) {
    std::vector<double> v;
    if (n.IsSequence()) {
      for (const auto& e : n) v.push_back(e.as<double>());
      if (v.size() == 1) v.assign(n_phi, v[0]);
    } else {
      v.assign(n_phi, n.as<double>());
    }
    if (static_cast<int>(v.size()) != n_phi) die("truth.json: per-angle list of wrong length");
    return v;
  };

  std::vector<double> x0(n_params);
  if (x0_kind == "truth") {
    if (!truth) die("--x0 truth: no <data>.truth.json next to the data file");
    const auto c = per_angle((*truth)["contrast"]), o = per_angle((*truth)["offset"]);
    for (int k = 0; k < n_phi; ++k) {
      x0[k] = c[k];
      x0[n_phi + k] = o[k];
    }
    for (int i = 0; i < n_phys; ++i)
      x0[2 * n_phi + i] = (*truth)["params"][phys_names[i]].as<double>();
  } else if (x0_kind == "mid") {
    for (int i = 0; i < n_params; ++i) x0[i] = 0.5 * (lb[i] + ub[i]);
  } else if (x0_kind == "default") {
    const double dflt[7] = {1e4, -1.5, 0.0, 1e-3, 0.0, 0.0, 0.0};
    for (int k = 0; k < n_phi; ++k) {
      std::vector<double> v(D.y.begin() + k * D.n_pairs, D.y.begin() + (k + 1) * D.n_pairs);
      const double o = percentile(v, 5.0);
      x0[k] = *std::max_element(v.begin(), v.end()) - o;
      x0[n_phi + k] = o;
    }
    for (int i = 0; i < n_phys; ++i) x0[2 * n_phi + i] = dflt[i];
  } else if (x0_kind.rfind("file:", 0) == 0) {  // homodyne layout, whitespace separated
    std::ifstream fx(x0_kind.substr(5));
    for (int i = 0; i < n_params; ++i)
      if (!(fx >> x0[i]))
        die("--x0 " + x0_kind + ": expected " + std::to_string(n_params) + " values");
  } else {
    die("unknown --x0 " + x0_kind);
  }
  for (int i = 0; i < n_params; ++i) x0[i] = std::min(std::max(x0[i], lb[i]), ub[i]);  // np.clip

  // ---------------------------------------------------------------- build the Ceres problem
  const auto t1 = Clock::now();
  std::vector<double> phys(x0.begin() + 2 * n_phi, x0.end());
  std::vector<double> scale(2 * n_phi);  // block k = (contrast_k, offset_k)
  for (int k = 0; k < n_phi; ++k) {
    scale[2 * k] = x0[k];
    scale[2 * k + 1] = x0[n_phi + k];
  }
  SharedModel shared(D, cfg.laminar, phys.data());
  ceres::Problem::Options popt;
  if (jac == "analytic") popt.evaluation_callback = &shared;
  ceres::Problem problem(popt);
  problem.AddParameterBlock(phys.data(), n_phys);
  for (int k = 0; k < n_phi; ++k) problem.AddParameterBlock(&scale[2 * k], 2);
  for (int c = 0; c < n_phys; ++c) {
    problem.SetParameterLowerBound(phys.data(), c, lb[2 * n_phi + c]);
    problem.SetParameterUpperBound(phys.data(), c, ub[2 * n_phi + c]);
  }
  for (int k = 0; k < n_phi; ++k) {
    problem.SetParameterLowerBound(&scale[2 * k], 0, lb[k]);
    problem.SetParameterUpperBound(&scale[2 * k], 0, ub[k]);
    problem.SetParameterLowerBound(&scale[2 * k], 1, lb[n_phi + k]);
    problem.SetParameterUpperBound(&scale[2 * k], 1, ub[n_phi + k]);
  }
  for (int k = 0; k < n_phi; ++k) {
    for (int i = 0; i < n_t - 1; ++i) {
      const double* yrow = D.y.data() + k * D.n_pairs + shared.row_start[i];
      ceres::CostFunction* cf;
      if (jac == "analytic") {
        cf = new RowCost(&shared, yrow, i, D.phi[k]);
      } else {
        auto* ad = new ceres::DynamicAutoDiffCostFunction<RowFunctor, 9>(
            new RowFunctor{&shared, yrow, i, D.phi[k], n_t - 1 - i});
        ad->AddParameterBlock(n_phys);
        ad->AddParameterBlock(2);
        ad->SetNumResiduals(n_t - 1 - i);
        cf = ad;
      }
      problem.AddResidualBlock(cf, nullptr, phys.data(), &scale[2 * k]);
    }
  }
  const double t_setup = seconds_since(t1);
  const double t_load = t_data + t_setup;
  const size_t m = D.y.size();

  auto to_x = [&]() {  // homodyne layout
    std::vector<double> x(n_params);
    for (int k = 0; k < n_phi; ++k) {
      x[k] = scale[2 * k];
      x[n_phi + k] = scale[2 * k + 1];
    }
    for (int c = 0; c < n_phys; ++c) x[2 * n_phi + c] = phys[c];
    return x;
  };
  std::vector<double*> col_blocks;  // Evaluate() column order: scale_0..scale_{n-1}, phys
  for (int k = 0; k < n_phi; ++k) col_blocks.push_back(&scale[2 * k]);
  col_blocks.push_back(phys.data());

  // ---------------------------------------------------------------- validation mode
  if (!eval_x.empty()) {
    std::ifstream fx(eval_x);
    std::vector<double> x;
    double v;
    while (fx >> v) x.push_back(v);
    if (static_cast<int>(x.size()) != n_params)
      die("--eval-x: expected " + std::to_string(n_params) + " values, got " +
          std::to_string(x.size()));
    for (int k = 0; k < n_phi; ++k) {
      scale[2 * k] = x[k];
      scale[2 * k + 1] = x[n_phi + k];
    }
    for (int c = 0; c < n_phys; ++c) phys[c] = x[2 * n_phi + c];
    ceres::Problem::EvaluateOptions eo;
    eo.parameter_blocks = col_blocks;
    eo.num_threads = threads;
    std::vector<double> r;
    ceres::CRSMatrix crs;
    double cost = 0;
    const auto te = Clock::now();
    if (!problem.Evaluate(eo, &cost, &r, nullptr, eval_jac ? &crs : nullptr))
      die("Evaluate failed");
    const double t_eval = seconds_since(te);
    if (eval_out.empty()) die("--eval-x needs --eval-out PREFIX");
    auto write = [&](const std::string& path, const std::vector<double>& a) {
      std::ofstream o(path, std::ios::binary);
      o.write(reinterpret_cast<const char*>(a.data()),
              static_cast<std::streamsize>(a.size() * sizeof(double)));
    };
    write(eval_out + ".y.bin", D.y);
    write(eval_out + ".r.bin", r);
    if (eval_jac) {
      std::vector<double> Jd(m * n_params, 0.0);
      for (int row = 0; row < crs.num_rows; ++row)
        for (int idx = crs.rows[row]; idx < crs.rows[row + 1]; ++idx) {
          const int col = crs.cols[idx];
          int hc = col;
          if (col < 2 * n_phi) hc = (col % 2 == 0) ? col / 2 : n_phi + col / 2;
          Jd[static_cast<size_t>(row) * n_params + hc] = crs.values[idx];
        }
      write(eval_out + ".J.bin", Jd);
    }
    std::printf(
        "{\"tool\": \"ceres\", \"mode_run\": \"eval\", \"jac\": %s, \"n_phi\": %d, \"n_t\": %d, "
        "\"n_params\": %d, \"n_residuals\": %zu, \"q\": %s, \"L\": %s, \"dt\": %s, \"t\": %s, "
        "\"phi\": %s, \"cost\": %s, \"t_eval_s\": %s, \"layout\": %s, \"state_mismatch\": %ld}\n",
        jstr(jac).c_str(), n_phi, n_t, n_params, m, jnum(D.q).c_str(), jnum(D.L).c_str(),
        jnum(D.dt).c_str(), jarr(D.t).c_str(), jarr(D.phi).c_str(), jnum(cost).c_str(),
        jnum(t_eval).c_str(), jstr(D.layout).c_str(), shared.n_mismatch.load());
    return 0;
  }

  // ---------------------------------------------------------------- solve
  ceres::Solver::Options opt;
  opt.minimizer_type = ceres::TRUST_REGION;
  opt.trust_region_strategy_type = ceres::LEVENBERG_MARQUARDT;
  opt.function_tolerance = tol;
  opt.parameter_tolerance = tol;
  opt.gradient_tolerance = tol;
  opt.max_num_iterations = max_iter;
  opt.num_threads = threads;
  // with bounds, Ceres' trust-region minimizer line-searches along each step (projected
  // onto the box; one extra gradient = Jacobian evaluation per iteration); 0 turns it off
  if (bounds_ls >= 0) opt.max_num_line_search_step_size_iterations = bounds_ls;
  opt.minimizer_progress_to_stdout = verbose;
  opt.logging_type = verbose ? ceres::PER_MINIMIZER_ITERATION : ceres::SILENT;
  const std::map<std::string, ceres::LinearSolverType> solvers = {
      {"dense_schur", ceres::DENSE_SCHUR},
      {"dense_qr", ceres::DENSE_QR},
      {"dense_normal_cholesky", ceres::DENSE_NORMAL_CHOLESKY},
      {"sparse_normal_cholesky", ceres::SPARSE_NORMAL_CHOLESKY},
      {"sparse_schur", ceres::SPARSE_SCHUR},
      {"iterative_schur", ceres::ITERATIVE_SCHUR}};
  if (!solvers.count(lin)) die("unknown --linear-solver " + lin);
  opt.linear_solver_type = solvers.at(lin);
  if (lin.find("schur") != std::string::npos) {
    // eliminate the (contrast_k, offset_k) blocks first; the 7x7 physical block is the
    // reduced (Schur complement) system
    auto ord = std::make_shared<ceres::ParameterBlockOrdering>();
    for (int k = 0; k < n_phi; ++k) ord->AddElementToGroup(&scale[2 * k], 0);
    ord->AddElementToGroup(phys.data(), 1);
    opt.linear_solver_ordering = ord;
  }
  std::string err;
  if (!opt.IsValid(&err)) die("invalid solver options: " + err);

  ceres::Solver::Summary summary;
  const auto t2 = Clock::now();
  ceres::Solve(opt, &problem, &summary);
  const double t_fit = seconds_since(t2);
  if (verbose) std::fprintf(stderr, "%s\n", summary.FullReport().c_str());

  // ---------------------------------------------------------------- report
  const auto t3 = Clock::now();
  ceres::Problem::EvaluateOptions eo;
  eo.num_threads = threads;
  std::vector<double> r;
  double cost = 0;
  problem.Evaluate(eo, &cost, &r, nullptr, nullptr);
  double ssr = 0;
  for (double v : r) ssr += v * v;
  const double t_post = seconds_since(t3);
  const std::vector<double> x = to_x();
  const double chi2 = 2.0 * ssr;
  const double dof = static_cast<double>(n_phi) * n_t * n_t - n_params;

  std::ostringstream o;
  o << "{\"tool\": \"ceres\", \"peer\": \"ceres\", \"variant\": " << jstr(jac + "+" + lin)
    << ", \"label\": " << (label.empty() ? "null" : jstr(label))
    << ", \"config\": " << jstr(cfg.path) << ", \"mode\": " << jstr(cfg.mode)
    << ", \"n_phi\": " << n_phi << ", \"n_frames\": " << D.n_frames << ", \"n_t\": " << n_t
    << ", \"n_params\": " << n_params << ", \"grid\": \"upper\""
    << ", \"n_residuals\": " << m << ", \"n_residual_blocks\": " << problem.NumResidualBlocks()
    << ", \"n_points_full_offdiag\": " << static_cast<long long>(n_phi) * n_t * (n_t - 1)
    << ", \"x0_kind\": " << jstr(x0_kind) << ", \"threads\": " << threads
    << ", \"wall_fit_s\": " << jnum(t_fit) << ", \"wall_load_s\": " << jnum(t_load)
    << ", \"wall_total_s\": " << jnum(t_load + t_fit) << ", \"wall_data_s\": " << jnum(t_data)
    << ", \"wall_setup_s\": " << jnum(t_setup) << ", \"wall_post_s\": " << jnum(t_post)
    << ", \"iterations\": " << summary.num_successful_steps + summary.num_unsuccessful_steps
    << ", \"successful_steps\": " << summary.num_successful_steps
    << ", \"unsuccessful_steps\": " << summary.num_unsuccessful_steps
    << ", \"nfev\": " << summary.num_residual_evaluations
    << ", \"njev\": " << summary.num_jacobian_evaluations
    << ", \"termination\": " << jstr(ceres::TerminationTypeToString(summary.termination_type))
    << ", \"message\": " << jstr(summary.message)
    << ", \"t_residual_eval_s\": " << jnum(summary.residual_evaluation_time_in_seconds)
    << ", \"t_jacobian_eval_s\": " << jnum(summary.jacobian_evaluation_time_in_seconds)
    << ", \"t_linear_solver_s\": " << jnum(summary.linear_solver_time_in_seconds)
    << ", \"t_preprocessor_s\": " << jnum(summary.preprocessor_time_in_seconds)
    << ", \"t_minimizer_s\": " << jnum(summary.minimizer_time_in_seconds)
    << ", \"t_postprocessor_s\": " << jnum(summary.postprocessor_time_in_seconds)
    << ", \"shared_state_computes\": " << shared.n_compute
    << ", \"state_mismatch\": " << shared.n_mismatch.load() << ", \"linear_solver\": "
    << jstr(ceres::LinearSolverTypeToString(summary.linear_solver_type_used))
    << ", \"jac\": " << jstr(jac) << ", \"tol\": " << jnum(tol) << ", \"max_iter\": " << max_iter
    << ", \"bounds_line_search\": " << opt.max_num_line_search_step_size_iterations
    << ", \"chi2\": " << jnum(chi2) << ", \"sum_r2\": " << jnum(ssr)
    << ", \"reduced_chi2\": " << jnum(chi2 / dof) << ", \"dof_homodyne\": " << jnum(dof)
    << ", \"ceres_initial_cost\": " << jnum(summary.initial_cost)
    << ", \"ceres_final_cost\": " << jnum(summary.final_cost)
    << ", \"contrast\": " << jarr(std::vector<double>(x.begin(), x.begin() + n_phi))
    << ", \"offset\": " << jarr(std::vector<double>(x.begin() + n_phi, x.begin() + 2 * n_phi))
    << ", \"params\": {";
  for (int c = 0; c < n_phys; ++c)
    o << (c ? ", " : "") << jstr(phys_names[c]) << ": " << jnum(phys[c]);
  o << "}, \"at_bounds\": [";
  bool first = true;
  for (int i = 0; i < n_params; ++i)
    if (x[i] <= lb[i] || x[i] >= ub[i]) {
      o << (first ? "" : ", ") << jstr(names[i]);
      first = false;
    }
  o << "]";
  if (truth) {
    o << ", \"truth\": {";
    for (int c = 0; c < n_phys; ++c)
      o << (c ? ", " : "") << jstr(phys_names[c]) << ": "
        << jnum((*truth)["params"][phys_names[c]].as<double>());
    o << "}, \"rel_err_vs_truth\": {";
    for (int c = 0; c < n_phys; ++c) {
      const double tv = (*truth)["params"][phys_names[c]].as<double>();
      o << (c ? ", " : "") << jstr(phys_names[c]) << ": "
        << (tv != 0 ? jnum((phys[c] - tv) / tv) : "null");
    }
    o << "}";
  }
  o << ", \"peak_rss_mib\": " << jnum(std::round(peak_rss_mib() * 10) / 10)
    << ", \"wall_process_s\": " << jnum(seconds_since(kProcessStart))
    << ", \"host\": {\"cpu\": " << jstr(cpu_model()) << ", \"ncpu_affinity\": " << ncpu_affinity()
    << ", \"compiler\": " << jstr(__VERSION__) << ", \"flags\": " << jstr(CERES_PEER_FLAGS) << "}"
    << ", \"versions\": {\"ceres\": " << jstr(CERES_VERSION_STRING) << ", \"hdf5\": "
    << jstr(std::to_string(H5_VERS_MAJOR) + "." + std::to_string(H5_VERS_MINOR) + "." +
            std::to_string(H5_VERS_RELEASE))
    << "}, \"timestamp\": " << jstr(timestamp()) << "}";
  std::printf("%s\n", o.str().c_str());
  std::fflush(stdout);
  return summary.IsSolutionUsable() ? 0 : 1;
}
