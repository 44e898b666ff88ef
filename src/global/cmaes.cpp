#include "global/cmaes.h"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include <fmt/format.h>

#include "config/choices.h"
#include "config/key_paths.h"
#include "core/errors.h"
#include "core/random.h"

namespace homodyne::global {
namespace {

// Stream identities ("CMAS", "CMAR"): the samples of (run, generation) and the
// restart decisions of a run.
constexpr std::uint64_t kSampleStream = 0x434d4153ULL;
constexpr std::uint64_t kRestartStream = 0x434d4152ULL;
constexpr double kInf = std::numeric_limits<double>::infinity();
std::string CmaesKey(std::string_view leaf) {
  return config::keys::Key(config::keys::kNlsqCmaes, leaf);
}

double Logistic(double z) { return 1.0 / (1.0 + std::exp(-z)); }

// The strategy parameters of Hansen's tutorial (2016) for dimension n and population λ.
struct Parameters {
  int mu = 0;
  std::vector<double> weights;  // λ entries: positive (sum 1), then active (negative)
  double mu_eff = 0.0;
  double c_sigma = 0.0, d_sigma = 0.0, c_c = 0.0, c_1 = 0.0, c_mu = 0.0;
  double chi_n = 0.0;
  double weight_sum = 0.0;  // Σ of all weights

  Parameters(int n, int lambda) {
    const double dn = n;
    mu = lambda / 2;
    std::vector<double> raw(static_cast<std::size_t>(lambda));
    for (int i = 0; i < lambda; ++i) {
      raw[static_cast<std::size_t>(i)] = std::log((lambda + 1) / 2.0) - std::log(i + 1.0);
    }
    double pos_sum = 0.0, pos_sq = 0.0, neg_sum = 0.0, neg_sq = 0.0;
    for (int i = 0; i < lambda; ++i) {
      const double w = raw[static_cast<std::size_t>(i)];
      if (i < mu) {
        pos_sum += w;
        pos_sq += w * w;
      } else {
        neg_sum += w;
        neg_sq += w * w;
      }
    }
    mu_eff = pos_sum * pos_sum / pos_sq;
    const double mu_eff_neg = neg_sq > 0.0 ? neg_sum * neg_sum / neg_sq : 0.0;
    c_c = (4.0 + mu_eff / dn) / (dn + 4.0 + 2.0 * mu_eff / dn);
    c_sigma = (mu_eff + 2.0) / (dn + mu_eff + 5.0);
    c_1 = 2.0 / ((dn + 1.3) * (dn + 1.3) + mu_eff);
    c_mu = std::min(1.0 - c_1 - 1e-8,
                    2.0 * (mu_eff - 2.0 + 1.0 / mu_eff) / ((dn + 2.0) * (dn + 2.0) + mu_eff));
    d_sigma = 1.0 + 2.0 * std::max(0.0, std::sqrt((mu_eff - 1.0) / (dn + 1.0)) - 1.0) + c_sigma;
    chi_n = std::sqrt(dn) * (1.0 - 1.0 / (4.0 * dn) + 1.0 / (21.0 * dn * dn));
    // Active weights: the negative ones sum to −min(α_μ⁻, α_μeff⁻, α_posdef⁻).
    const double alpha_mu = 1.0 + c_1 / c_mu;
    const double alpha_mu_eff = 1.0 + 2.0 * mu_eff_neg / (mu_eff + 2.0);
    const double alpha_posdef = (1.0 - c_1 - c_mu) / (dn * c_mu);
    const double alpha = std::min({alpha_mu, alpha_mu_eff, alpha_posdef});
    weights.resize(raw.size());
    for (int i = 0; i < lambda; ++i) {
      const double w = raw[static_cast<std::size_t>(i)];
      weights[static_cast<std::size_t>(i)] =
          i < mu ? w / pos_sum : (neg_sum < 0.0 ? alpha * w / -neg_sum : 0.0);
    }
    weight_sum = std::accumulate(weights.begin(), weights.end(), 0.0);
  }
};

using Matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Vector = Eigen::VectorXd;

Vector ToVector(const std::vector<double>& v) {
  return Eigen::Map<const Vector>(v.data(), static_cast<Eigen::Index>(v.size()));
}
std::vector<double> FromVector(const Vector& v) { return {v.data(), v.data() + v.size()}; }

}  // namespace

std::string_view ToString(RestartStrategy s) { return config::ChoiceName(s); }

std::string_view ToString(CmaesStop s) {
  switch (s) {
    case CmaesStop::kNone:
      return "none";
    case CmaesStop::kTolX:
      return "tol_x";
    case CmaesStop::kTolFun:
      return "tol_fun";
    case CmaesStop::kMaxGenerations:
      return "max_generations";
    case CmaesStop::kNumerical:
      return "numerical";
    case CmaesStop::kMaxRestarts:
      return "max_restarts";
  }
  return "unknown";
}

void CmaesOptions::Validate() const {
  if (popsize != 0 && popsize < 4) {
    ThrowBadInput(fmt::format("popsize must be ≥ 4 (got {})", popsize), {}, CmaesKey("popsize"));
  }
  if (max_generations < 1) {
    ThrowBadInput(fmt::format("max_generations must be ≥ 1 (got {})", max_generations), {},
                  CmaesKey("max_generations"));
  }
  if (!(sigma > 0.0 && sigma <= 1.0)) {
    ThrowBadInput(fmt::format("sigma must be in (0, 1] (got {})", sigma), {}, CmaesKey("sigma"));
  }
  if (!(tol_fun > 0.0)) {
    ThrowBadInput(fmt::format("tol_fun must be > 0 (got {})", tol_fun), {}, CmaesKey("tol_fun"));
  }
  if (!(tol_x > 0.0)) {
    ThrowBadInput(fmt::format("tol_x must be > 0 (got {})", tol_x), {}, CmaesKey("tol_x"));
  }
  if (max_restarts < 0) {
    ThrowBadInput(fmt::format("max_restarts must be ≥ 0 (got {})", max_restarts), {},
                  CmaesKey("max_restarts"));
  }
  if (!(normalization_epsilon > 0.0)) {
    ThrowBadInput(fmt::format("normalization_epsilon must be > 0 (got {})", normalization_epsilon),
                  {}, CmaesKey("normalization_epsilon"));
  }
}

void CmaesState::Store(checkpoint::CheckpointRecord& r, const std::string& p) const {
  r.PutInts(p + "counters", {run, generation, total_generations, evaluations, popsize,
                             flat_generations, finished ? 1 : 0, static_cast<int>(stop)});
  r.PutDoubles(p + "mean", mean);
  r.PutDouble(p + "sigma", sigma);
  r.PutDoubles(p + "covariance", covariance);
  r.PutDoubles(p + "path_sigma", path_sigma);
  r.PutDoubles(p + "path_c", path_c);
  r.PutDoubles(p + "run_start", run_start);
  r.PutDoubles(p + "best_z", best_z);
  r.PutDoubles(p + "best_x", best_x);
  r.PutDouble(p + "best_chi2", best_chi2);
  r.PutDouble(p + "run_best_chi2", run_best_chi2);
  std::vector<double> runs_flat;
  for (const CmaesRun& run_record : runs) {
    runs_flat.insert(
        runs_flat.end(),
        {static_cast<double>(run_record.popsize), static_cast<double>(run_record.generations),
         run_record.best_chi2, static_cast<double>(static_cast<int>(run_record.stop))});
  }
  r.PutDoubles(p + "runs", runs_flat);
}

CmaesState CmaesState::Load(const checkpoint::CheckpointRecord& r, const std::string& p) {
  CmaesState s;
  const auto& c = r.Ints(p + "counters");
  HOMODYNE_CHECK(c.size() == 8, "CMA-ES checkpoint counters have the wrong size");
  s.run = static_cast<int>(c[0]);
  s.generation = static_cast<int>(c[1]);
  s.total_generations = static_cast<int>(c[2]);
  s.evaluations = c[3];
  s.popsize = static_cast<int>(c[4]);
  s.flat_generations = static_cast<int>(c[5]);
  s.finished = c[6] != 0;
  s.stop = static_cast<CmaesStop>(c[7]);
  s.mean = r.Doubles(p + "mean");
  s.sigma = r.Double(p + "sigma");
  s.covariance = r.Doubles(p + "covariance");
  s.path_sigma = r.Doubles(p + "path_sigma");
  s.path_c = r.Doubles(p + "path_c");
  s.run_start = r.Doubles(p + "run_start");
  s.best_z = r.Doubles(p + "best_z");
  s.best_x = r.Doubles(p + "best_x");
  s.best_chi2 = r.Double(p + "best_chi2");
  s.run_best_chi2 = r.Double(p + "run_best_chi2");
  const auto& runs_flat = r.Doubles(p + "runs");
  HOMODYNE_CHECK(runs_flat.size() % 4 == 0, "CMA-ES checkpoint runs have the wrong size");
  for (std::size_t i = 0; i < runs_flat.size(); i += 4) {
    s.runs.push_back({static_cast<int>(runs_flat[i]), static_cast<int>(runs_flat[i + 1]),
                      runs_flat[i + 2],
                      static_cast<CmaesStop>(static_cast<int>(runs_flat[i + 3]))});
  }
  return s;
}

Cmaes::Cmaes(CmaesOptions options, std::vector<double> x0, std::vector<double> lower,
             std::vector<double> upper)
    : options_(options), x0_(std::move(x0)), lower_(std::move(lower)), upper_(std::move(upper)) {
  options_.Validate();
  HOMODYNE_CHECK(x0_.size() == lower_.size() && x0_.size() == upper_.size(),
                 "CMA-ES start and bounds differ in size");
  for (std::size_t i = 0; i < x0_.size(); ++i) {
    HOMODYNE_CHECK(lower_[i] <= upper_[i], "CMA-ES bounds are inverted");
    x0_[i] = std::clamp(x0_[i], lower_[i], upper_[i]);
    if (upper_[i] - lower_[i] > options_.normalization_epsilon)
      free_.push_back(static_cast<int>(i));
  }
  const int n = num_searched();
  base_popsize_ =
      options_.popsize > 0
          ? options_.popsize
          : std::max(4, 4 + static_cast<int>(std::floor(3.0 * std::log(std::max(n, 1)))));
  state_.best_x = x0_;
  state_.best_chi2 = kInf;
  if (n == 0) {  // nothing to search: the start is the answer
    state_.finished = true;
    state_.stop = CmaesStop::kTolX;
    return;
  }
  // The start in z: the logit of the normalised start, kept off the box edges.
  std::vector<double> z0(static_cast<std::size_t>(n));
  for (int k = 0; k < n; ++k) {
    const auto i = static_cast<std::size_t>(free_[static_cast<std::size_t>(k)]);
    const double u = std::clamp((x0_[i] - lower_[i]) / (upper_[i] - lower_[i]), 1e-8, 1.0 - 1e-8);
    z0[static_cast<std::size_t>(k)] = std::log(u / (1.0 - u));
  }
  state_.best_z = z0;
  StartRun(0, z0);
}

int Cmaes::RunPopsize(int run) const {
  if (options_.restart_strategy == RestartStrategy::kNone) return base_popsize_;
  if (run % 2 == 0) return 2 * base_popsize_;
  CounterRng rng(options_.seed, kRestartStream, static_cast<std::uint64_t>(run));
  const int lo = std::max(4, base_popsize_ / 2);
  const int hi = std::max(lo, base_popsize_);
  return lo + static_cast<int>(rng.NextU64() % static_cast<std::uint64_t>(hi - lo + 1));
}

void Cmaes::StartRun(int run, std::vector<double> start) {
  const auto n = static_cast<std::size_t>(num_searched());
  state_.run = run;
  state_.generation = 0;
  state_.popsize = RunPopsize(run);
  state_.mean = start;
  state_.run_start = std::move(start);
  state_.sigma = options_.sigma;
  state_.covariance.assign(n * n, 0.0);
  for (std::size_t i = 0; i < n; ++i) state_.covariance[i * n + i] = 1.0;
  state_.path_sigma.assign(n, 0.0);
  state_.path_c.assign(n, 0.0);
  state_.flat_generations = 0;
  state_.run_best_chi2 = kInf;
}

void Cmaes::Restore(CmaesState state) {
  const auto n = static_cast<std::size_t>(num_searched());
  if (state.best_x.size() != x0_.size() || state.mean.size() != n ||
      state.covariance.size() != n * n || state.path_sigma.size() != n ||
      state.path_c.size() != n || state.run_start.size() != n || state.best_z.size() != n) {
    ThrowBadInput(fmt::format("the CMA-ES checkpoint is for another problem ({} parameters, {} "
                              "searched; this run {} and {})",
                              state.best_x.size(), state.mean.size(), x0_.size(), n),
                  {}, "cmaes.mean");
  }
  state_ = std::move(state);
}

std::vector<double> Cmaes::ToParameters(std::span<const double> z) const {
  std::vector<double> x = x0_;
  for (std::size_t k = 0; k < free_.size(); ++k) {
    const auto i = static_cast<std::size_t>(free_[k]);
    x[i] = std::clamp(lower_[i] + (upper_[i] - lower_[i]) * Logistic(z[k]), lower_[i], upper_[i]);
  }
  return x;
}

namespace {

// One generation's samples: z_k ~ N(0, I) from the stream of (run, generation) and the steps
// y_k = B·D·z_k, where C = B·diag(d²)·Bᵀ; the candidates are m + σ·y_k (z space).
struct Samples {
  Matrix c;  // the covariance, symmetrised
  Matrix b;  // its eigenvectors
  std::vector<Vector> zs, ys;
  std::vector<std::vector<double>> points;
};

Samples Sample(const CmaesState& s, std::uint64_t seed, int n, int lambda) {
  const auto nn = static_cast<Eigen::Index>(n);
  Samples g;
  // Symmetrised, eigenvalues kept positive relative to the largest.
  g.c = Eigen::Map<const Matrix>(s.covariance.data(), nn, nn);
  g.c = 0.5 * (g.c + g.c.transpose()).eval();
  Eigen::SelfAdjointEigenSolver<Matrix> eig(g.c);
  g.b = eig.eigenvectors();
  Vector d2 = eig.eigenvalues();
  const double d2_max = std::max(d2.maxCoeff(), 1e-300);
  Vector d = d2.cwiseMax(1e-14 * d2_max).cwiseSqrt();
  CounterRng rng(
      seed, kSampleStream,
      (static_cast<std::uint64_t>(s.run) << 32) | static_cast<std::uint64_t>(s.generation));
  const Vector mean = ToVector(s.mean);
  g.zs.assign(static_cast<std::size_t>(lambda), Vector(nn));
  g.ys.resize(static_cast<std::size_t>(lambda));
  g.points.resize(static_cast<std::size_t>(lambda));
  for (std::size_t k = 0; k < g.zs.size(); ++k) {
    for (Eigen::Index i = 0; i < nn; ++i) g.zs[k][i] = rng.Normal();
    g.ys[k] = g.b * d.cwiseProduct(g.zs[k]);
    const Vector zk = mean + s.sigma * g.ys[k];
    g.points[k] = FromVector(zk);
  }
  return g;
}

// The candidates' indices by χ² (non-finite values count as +inf; ties in sampling order).
std::vector<int> Rank(std::vector<double>& chi2) {
  for (double& v : chi2) {
    if (!std::isfinite(v)) v = kInf;
  }
  std::vector<int> order(chi2.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int bb) {
    return chi2[static_cast<std::size_t>(a)] < chi2[static_cast<std::size_t>(bb)];
  });
  return order;
}

// The update of the distribution from the ranked samples (mean, evolution paths, covariance,
// step size, counters); returns the stop criterion of the run met (kNone: none).
CmaesStop Update(CmaesState& s, const CmaesOptions& o, const Parameters& par, const Samples& g,
                 const std::vector<int>& order, const std::vector<double>& chi2) {
  const auto nn = static_cast<Eigen::Index>(g.b.rows());
  const int n = static_cast<int>(nn);
  const int lambda = static_cast<int>(order.size());
  // Recombination of the selected steps.
  Vector y_w = Vector::Zero(nn), z_w = Vector::Zero(nn);
  for (int i = 0; i < par.mu; ++i) {
    const auto k = static_cast<std::size_t>(order[static_cast<std::size_t>(i)]);
    y_w += par.weights[static_cast<std::size_t>(i)] * g.ys[k];
    z_w += par.weights[static_cast<std::size_t>(i)] * g.zs[k];
  }
  const Vector new_mean = ToVector(s.mean) + s.sigma * y_w;  // c_m = 1

  // Evolution paths; C^(−1/2)·y_w = B·z_w.
  Vector ps = ToVector(s.path_sigma);
  ps = (1.0 - par.c_sigma) * ps +
       std::sqrt(par.c_sigma * (2.0 - par.c_sigma) * par.mu_eff) * (g.b * z_w);
  const double ps_norm = ps.norm();
  const double decay = 1.0 - std::pow(1.0 - par.c_sigma, 2.0 * (s.generation + 1));
  const bool h_sigma = ps_norm / std::sqrt(decay) < (1.4 + 2.0 / (n + 1.0)) * par.chi_n;
  Vector pc = ToVector(s.path_c);
  pc = (1.0 - par.c_c) * pc +
       (h_sigma ? std::sqrt(par.c_c * (2.0 - par.c_c) * par.mu_eff) : 0.0) * y_w;

  // Covariance: rank one + rank μ with active weights (the negative ones rescaled by
  // n/‖C^(−1/2)y‖² = n/‖z‖²).
  const double delta_h = h_sigma ? 0.0 : par.c_c * (2.0 - par.c_c);
  Matrix c_new = (1.0 + par.c_1 * delta_h - par.c_1 - par.c_mu * par.weight_sum) * g.c +
                 par.c_1 * pc * pc.transpose();
  for (int i = 0; i < lambda; ++i) {
    double w = par.weights[static_cast<std::size_t>(i)];
    if (w == 0.0) continue;
    const auto k = static_cast<std::size_t>(order[static_cast<std::size_t>(i)]);
    if (w < 0.0) w *= n / std::max(g.zs[k].squaredNorm(), 1e-300);
    c_new += par.c_mu * w * g.ys[k] * g.ys[k].transpose();
  }
  const double sigma =
      std::min(s.sigma * std::exp((par.c_sigma / par.d_sigma) * (ps_norm / par.chi_n - 1.0)), 1e8);

  s.mean = FromVector(new_mean);
  s.path_sigma = FromVector(ps);
  s.path_c = FromVector(pc);
  s.covariance.assign(c_new.data(), c_new.data() + c_new.size());
  s.sigma = sigma;
  s.generation += 1;
  s.total_generations += 1;
  s.evaluations += lambda;

  // Stop criteria of the run.
  const double f_best = chi2[static_cast<std::size_t>(order.front())];
  const double f_worst = chi2[static_cast<std::size_t>(order.back())];
  const bool flat = std::isfinite(f_worst) && f_worst - f_best <= o.tol_fun * std::abs(f_best);
  s.flat_generations = flat ? s.flat_generations + 1 : 0;
  if (!c_new.allFinite() || !std::isfinite(sigma) || !new_mean.allFinite()) {
    return CmaesStop::kNumerical;
  }
  if (sigma * std::sqrt(c_new.diagonal().maxCoeff()) < o.tol_x) return CmaesStop::kTolX;
  if (s.flat_generations >= CmaesOptions::kFlatGenerations) return CmaesStop::kTolFun;
  if (s.generation >= o.max_generations) return CmaesStop::kMaxGenerations;
  return CmaesStop::kNone;
}

}  // namespace

CmaesGeneration Cmaes::Step(const BatchObjective& f) {
  HOMODYNE_CHECK(!state_.finished, "CMA-ES stepped after it finished");
  CmaesState& s = state_;
  const int lambda = s.popsize;
  const Parameters par(num_searched(), lambda);

  // Sample, then evaluate: one call of f for the generation.
  const Samples samples = Sample(s, options_.seed, num_searched(), lambda);
  std::vector<std::vector<double>> xs(static_cast<std::size_t>(lambda));
  for (std::size_t k = 0; k < xs.size(); ++k) xs[k] = ToParameters(samples.points[k]);
  std::vector<double> chi2;
  f(xs, chi2);
  HOMODYNE_CHECK(chi2.size() == xs.size(), "batch objective returned the wrong count");
  const std::vector<int> order = Rank(chi2);
  const auto best_k = static_cast<std::size_t>(order.front());
  s.run_best_chi2 = std::min(s.run_best_chi2, chi2[best_k]);
  if (chi2[best_k] < s.best_chi2) {
    s.best_chi2 = chi2[best_k];
    s.best_x = xs[best_k];
    s.best_z = samples.points[best_k];
  }

  const CmaesStop stop = Update(s, options_, par, samples, order, chi2);
  CmaesGeneration g;
  g.run = s.run;
  g.generation = s.generation;
  g.total_generations = s.total_generations;
  g.popsize = lambda;
  g.generation_best = chi2[best_k];
  g.best_chi2 = s.best_chi2;
  g.sigma = s.sigma;
  g.evaluations = s.evaluations;
  if (stop == CmaesStop::kNone) return g;
  g.run_ended = true;
  g.run_stop = stop;
  EndRun(stop);
  return g;
}

void Cmaes::EndRun(CmaesStop stop) {
  CmaesState& s = state_;
  s.runs.push_back({s.popsize, s.generation, s.run_best_chi2, stop});
  const int runs_allowed =
      options_.restart_strategy == RestartStrategy::kBipop ? 1 + options_.max_restarts : 1;
  if (s.run + 1 >= runs_allowed) {
    s.finished = true;
    s.stop = options_.restart_strategy == RestartStrategy::kBipop && options_.max_restarts > 0
                 ? CmaesStop::kMaxRestarts
                 : stop;
    return;
  }
  // Next run: at the best point so far with probability ½, else where this run started.
  CounterRng coin(options_.seed, kRestartStream, static_cast<std::uint64_t>(s.run + 1));
  coin.NextU64();  // the draw of the run's population size
  std::vector<double> start = coin.Uniform() < 0.5 ? s.best_z : s.run_start;
  StartRun(s.run + 1, std::move(start));
}

std::vector<double> Cmaes::Setup() const {
  std::vector<double> v = {static_cast<double>(base_popsize_),
                           static_cast<double>(options_.max_generations),
                           options_.sigma,
                           options_.tol_fun,
                           options_.tol_x,
                           static_cast<double>(static_cast<int>(options_.restart_strategy)),
                           static_cast<double>(options_.max_restarts),
                           static_cast<double>(options_.seed >> 32),
                           static_cast<double>(options_.seed & 0xffffffffULL),
                           options_.normalization_epsilon};
  v.insert(v.end(), x0_.begin(), x0_.end());
  v.insert(v.end(), lower_.begin(), lower_.end());
  v.insert(v.end(), upper_.begin(), upper_.end());
  return v;
}

CmaesSummary Cmaes::Summary() const {
  CmaesSummary r;
  r.x = state_.best_x;
  r.chi2 = state_.best_chi2;
  r.generations = state_.total_generations;
  r.evaluations = state_.evaluations;
  r.restarts = std::max(0, static_cast<int>(state_.runs.size()) - 1);
  r.base_popsize = base_popsize_;
  r.runs = state_.runs;
  r.stop = state_.stop;
  return r;
}

}  // namespace homodyne::global
