#include "cmc/shard_filter.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/errors.h"

namespace homodyne::cmc {
namespace {

double Median(std::vector<double> v) {
  if (v.empty()) return std::nan("");
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  if (v.size() % 2 == 1) return *mid;
  const double upper = *mid;
  return 0.5 * (upper + *std::max_element(v.begin(), mid));
}

// The q-quantile of χ²(k) by the Wilson–Hilferty cube (within 3 % in the tail used here,
// k ≥ 1), z the standard normal quantile of q.
double ChiSquareQuantile(int k, double z) {
  const double c = 2.0 / (9.0 * k);
  const double u = 1.0 - c + z * std::sqrt(c);
  return k * u * u * u;
}
constexpr double kZ999 = 3.090232306167813;  // standard normal 0.999 quantile
constexpr double kZ99 = 2.326347874040841;   // 0.99

struct Moments {
  std::vector<double> mean, var;
};

Moments ColumnMoments(const ShardDraws& d) {
  Moments m;
  const int n = d.count();
  m.mean.assign(static_cast<std::size_t>(d.dims), 0.0);
  m.var.assign(static_cast<std::size_t>(d.dims), 0.0);
  for (int j = 0; j < n; ++j) {
    for (int p = 0; p < d.dims; ++p) {
      m.mean[static_cast<std::size_t>(p)] += d.draws[static_cast<std::size_t>(j * d.dims + p)];
    }
  }
  for (double& x : m.mean) x /= std::max(n, 1);
  for (int j = 0; j < n; ++j) {
    for (int p = 0; p < d.dims; ++p) {
      const double e =
          d.draws[static_cast<std::size_t>(j * d.dims + p)] - m.mean[static_cast<std::size_t>(p)];
      m.var[static_cast<std::size_t>(p)] += e * e;
    }
  }
  for (double& x : m.var) x /= std::max(n - 1, 1);
  return m;
}

// Step 4's CV of the kept shards' means of column pp (reported under either rule).
double ShardMeansCv(const std::vector<Moments>& mom, const std::vector<std::size_t>& alive,
                    std::size_t pp, const ShardFilterOptions& o) {
  double mean = 0.0, m2 = 0.0;
  for (std::size_t s : alive) mean += mom[s].mean[pp];
  mean /= static_cast<double>(alive.size());
  for (std::size_t s : alive) m2 += (mom[s].mean[pp] - mean) * (mom[s].mean[pp] - mean);
  const double sd = std::sqrt(m2 / static_cast<double>(alive.size() - 1));
  const double range = pp < o.parameter_ranges.size() ? o.parameter_ranges[pp] : 0.0;
  return sd / std::max(std::abs(mean), 0.01 * range);
}

// A failed heterogeneity test: the error when heterogeneity_abort, else a warning.
void Disagree(const std::string& msg, const ShardFilterOptions& o, ShardFilterResult& r) {
  if (o.heterogeneity_abort) {
    throw Error(ErrorKind::kNumerical,
                msg +
                    "; set optimization.cmc.validation.heterogeneity_abort: false to "
                    "combine anyway");
  }
  r.warnings.push_back(msg);
}

// Cochran's Q of the kept shards' means of column pp against their posterior variances
// (NaN when a shard has no spread).
double CochranQ(const std::vector<Moments>& mom, const std::vector<std::size_t>& alive,
                std::size_t pp) {
  double sw = 0.0, swm = 0.0;
  for (std::size_t s : alive) {
    const double v = mom[s].var[pp];
    if (!(v > 0.0)) return std::nan("");
    sw += 1.0 / v;
    swm += mom[s].mean[pp] / v;
  }
  const double centre = swm / sw;
  double q = 0.0;
  for (std::size_t s : alive) {
    const double d = mom[s].mean[pp] - centre;
    q += d * d / mom[s].var[pp];
  }
  return q;
}

// Step 4 by Cochran's Q (ShardFilterOptions::scatter_rule).
void CheckScatter(double q, int dof, const std::string& name, const ShardFilterOptions& o,
                  ShardFilterResult& r) {
  if (std::isnan(q)) return;  // a shard without spread: the robust step reports it
  const double abort_at = ChiSquareQuantile(dof, kZ999);
  if (q > abort_at) {
    Disagree(fmt::format("CMC: shard means of {} disagree beyond their posterior sds (Cochran's "
                         "Q {:.3g} on {} degree(s) of freedom > {:.3g}, p < 0.001)",
                         name, q, dof, abort_at),
             o, r);
  } else if (q > ChiSquareQuantile(dof, kZ99)) {
    r.warnings.push_back(fmt::format(
        "CMC: shard means of {} vary more than their posterior sds allow (Cochran's Q {:.3g} on "
        "{} degree(s) of freedom, p < 0.01)",
        name, q, dof));
  }
}

// Step 4 by homodyne's CV. A CV above max_parameter_cv stops the run only when the shards
// also disagree beyond their own posterior sds: the CV divides by |mean|, so a parameter
// whose value is near 0 (D_offset of 10 on a posterior sd of hundreds) exceeds any CV bound
// while its shard posteriors agree.
void CheckCv(double cv, double q, int dof, double mean, const std::string& name,
             const ShardFilterOptions& o, ShardFilterResult& r) {
  if (cv > o.max_parameter_cv) {
    const double abort_at = ChiSquareQuantile(dof, kZ999);
    if (std::isnan(q) || q > abort_at) {
      Disagree(fmt::format("CMC: shard means of {} disagree (CV {:.3f} > max_parameter_cv "
                           "{:.3f}; Cochran's Q {:.3g} on {} degree(s) of freedom > {:.3g})",
                           name, cv, o.max_parameter_cv, q, dof, abort_at),
               o, r);
    } else {
      r.warnings.push_back(fmt::format(
          "CMC: shard means of {} have CV {:.3f} > max_parameter_cv {:.3f} but agree within "
          "their posterior sds (Cochran's Q {:.3g} on {} degree(s) of freedom <= {:.3g}); the "
          "CV is large because their mean {:.4g} is near 0, so the shards are combined",
          name, cv, o.max_parameter_cv, q, dof, abort_at, mean));
    }
  } else if (cv > 0.5 * o.max_parameter_cv) {
    r.warnings.push_back(fmt::format("CMC: shard means of {} vary (CV {:.3f} > {:.3f})", name, cv,
                                     0.5 * o.max_parameter_cv));
  }
}

// Outliers by the modified z-score of the shard means, parameter by parameter: each shard of
// `alive`'s first reason ("" for none), indexed by shard.
std::vector<std::string> MeanOutliers(const std::vector<Moments>& mom,
                                      const std::vector<std::size_t>& alive, int dims,
                                      const std::vector<std::string>& names) {
  std::vector<std::string> why(mom.size());
  for (int p = 0; p < dims && alive.size() >= 3; ++p) {
    const auto pp = static_cast<std::size_t>(p);
    std::vector<double> m;
    for (std::size_t s : alive) m.push_back(mom[s].mean[pp]);
    const double med = Median(m);
    std::vector<double> dev;
    for (double x : m) dev.push_back(std::abs(x - med));
    const double mad = Median(dev);
    if (!(mad > 0.0)) continue;
    for (std::size_t s : alive) {
      const double z = 0.6745 * std::abs(mom[s].mean[pp] - med) / mad;
      if (z >= 3.5 && why[s].empty()) {
        why[s] = fmt::format("outlier in {} (mean {:.6g}, modified z = {:.2f} >= 3.5)", names[pp],
                             mom[s].mean[pp], z);
      }
    }
  }
  return why;
}

// Shards of `alive` with a variance below 1e-6 of the shards' median on some parameter.
std::vector<std::string> DegenerateVariances(const std::vector<Moments>& mom,
                                             const std::vector<std::size_t>& alive, int dims,
                                             const std::vector<std::string>& names) {
  std::vector<std::string> deg(mom.size());
  for (int p = 0; p < dims; ++p) {
    const auto pp = static_cast<std::size_t>(p);
    std::vector<double> v;
    for (std::size_t s : alive) v.push_back(mom[s].var[pp]);
    const double med = Median(v);
    for (std::size_t s : alive) {
      if (mom[s].var[pp] < 1e-6 * med && deg[s].empty()) {
        deg[s] = fmt::format("degenerate: variance of {} {:.3g} < 1e-6 x median {:.3g}", names[pp],
                             mom[s].var[pp], med);
      }
    }
  }
  return deg;
}

std::size_t Marked(const std::vector<std::string>& reasons, const std::vector<std::size_t>& alive) {
  return static_cast<std::size_t>(std::count_if(
      alive.begin(), alive.end(), [&](std::size_t s) { return !reasons[s].empty(); }));
}

}  // namespace

ShardFilterResult FilterShards(const std::vector<ShardDraws>& draws,
                               const std::vector<double>& divergence_rates,
                               const std::vector<std::string>& names, const ShardFilterOptions& o) {
  const std::size_t k = draws.size();
  HOMODYNE_CHECK(divergence_rates.size() == k, "one divergence rate per shard");
  ShardFilterResult r;
  r.keep.assign(k, true);
  const auto reject = [&](std::size_t s, std::string reason) {
    r.keep[s] = false;
    r.rejected.push_back({static_cast<int>(s), std::move(reason)});
  };
  for (std::size_t s = 0; s < k; ++s) {
    if (draws[s].count() == 0) {
      reject(s, "no draws");
    } else if (divergence_rates[s] > o.max_divergence_rate) {
      reject(s, fmt::format("divergence rate {:.3f} > max_divergence_rate {:.3f}",
                            divergence_rates[s], o.max_divergence_rate));
    }
  }
  const auto kept = [&] {
    std::vector<std::size_t> v;
    for (std::size_t s = 0; s < k; ++s) {
      if (r.keep[s]) v.push_back(s);
    }
    return v;
  };
  if (kept().empty()) {
    throw Error(ErrorKind::kNumerical,
                fmt::format("CMC: all {} shards were rejected (divergence rate above {})", k,
                            o.max_divergence_rate));
  }
  std::vector<Moments> mom(k);
  for (std::size_t s : kept()) mom[s] = ColumnMoments(draws[s]);
  const int dims = draws[kept().front()].dims;

  if (o.robust) {
    std::vector<std::size_t> alive = kept();
    const std::vector<std::string> why = MeanOutliers(mom, alive, dims, names);
    if (Marked(why, alive) + 3 <= alive.size()) {
      for (std::size_t s : alive) {
        if (!why[s].empty()) reject(s, why[s]);
      }
    }
    alive = kept();
    if (alive.size() >= 3) {
      const std::vector<std::string> deg = DegenerateVariances(mom, alive, dims, names);
      if (Marked(deg, alive) < alive.size()) {
        for (std::size_t s : alive) {
          if (!deg[s].empty()) reject(s, deg[s]);
        }
      }
    }
  }

  // Heterogeneity of the kept shards.
  const std::vector<std::size_t> alive = kept();
  for (int p : o.heterogeneity_parameters) {
    const auto pp = static_cast<std::size_t>(p);
    if (alive.size() < 2) {
      r.parameter_cv.push_back(std::nan(""));
      r.parameter_q.push_back(std::nan(""));
      continue;
    }
    const double cv = ShardMeansCv(mom, alive, pp, o);
    r.parameter_cv.push_back(cv);
    const double q = CochranQ(mom, alive, pp);
    const int dof = static_cast<int>(alive.size()) - 1;
    r.parameter_q.push_back(q);
    if (o.scatter_rule) {
      CheckScatter(q, dof, names[pp], o, r);
    } else {
      double mean = 0.0;
      for (std::size_t s : alive) mean += mom[s].mean[pp];
      CheckCv(cv, q, dof, mean / static_cast<double>(alive.size()), names[pp], o, r);
    }
  }
  return r;
}

}  // namespace homodyne::cmc
