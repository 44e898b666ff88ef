#include "app/nlsq_report.h"

#include <cmath>
#include <numeric>

#include <fmt/format.h>

namespace homodyne {
namespace {

double Mean(const std::vector<double>& v) {
  return v.empty() ? std::nan("") : std::accumulate(v.begin(), v.end(), 0.0) / v.size();
}

// The summary's lines of what the data leave undetermined (nlsq/degeneracy.h).
std::string FormatDegeneracyLines(const nlsq::DegeneracyDiagnostics& d) {
  std::string out;
  for (const nlsq::CorrelatedPair& p : d.correlated) {
    out += fmt::format("  degenerate        {} ~ {} (correlation {:+.4f})\n", p.first, p.second,
                       p.correlation);
  }
  for (const nlsq::EquivalentMinimum& m : d.equivalent_minima) {
    out += fmt::format(
        "  equally good      {} {:.6g} (objective {:.12g}{}, {:.6g} half-way): the data do not "
        "choose between it and the answer's {:.6g}\n",
        m.parameter, m.value, m.objective, m.on_rows ? " on the rows" : "", m.barrier_objective,
        m.answer_value);
  }
  if (!d.weakest.empty()) {
    const nlsq::WeakDirection& w = d.weakest.front();
    out += fmt::format(
        "  weakest direction {} (eigenvalue {:.2g} of the largest){}\n", nlsq::DescribeDirection(w),
        w.relative_eigenvalue,
        w.relative_eigenvalue < nlsq::kWeakDirectionWarning ? ": barely constrained" : "");
  }
  return out;
}

}  // namespace

std::string FormatNlsqSummary(const nlsq::NlsqRunResult& r) {
  const nlsq::FitReport& f = r.report;
  std::string out = "\n================ NLSQ OPTIMIZATION COMPLETE ================\n";
  out += fmt::format("  status            {} ({})\n", f.convergence_status, r.summary.message);
  out += fmt::format("  iterations        {}  (data passes {}, {:.2f} s)\n", f.iterations, r.passes,
                     f.execution_time);
  out += fmt::format("  chi2              {:.10g}\n", f.chi_squared);
  out += fmt::format("  reduced chi2      {:.6g}  (homodyne's, sigma = 0.01)\n",
                     f.reduced_chi_squared);
  if (std::isfinite(f.noise_reduced_chi_squared)) {
    out += fmt::format(
        "  chi2/noise        {:.6g}  (reduced, in units of the data's noise level {:.3g}; "
        "quality: {})\n",
        f.noise_reduced_chi_squared, Mean(f.noise_sigma), f.quality_flag);
  } else {
    out += fmt::format("  chi2/noise        not measured ({}; quality: {})\n", f.noise_unmeasured,
                       f.quality_flag);
  }
  if (std::isfinite(f.held_scaling_gain)) {
    out += fmt::format("  held scaling      fitting it would lower chi2/noise by {:.4g}\n",
                       f.held_scaling_gain);
  }
  if (!f.misfit_reasons.empty()) {
    out += fmt::format("  verdict           MISFIT{}: the answer does not describe the data\n",
                       f.convergence_status == "converged" ? " (exit 5)" : "");
    for (const std::string& why : f.misfit_reasons) out += fmt::format("    - {}\n", why);
  }
  if (f.loss == "linear") {
    out += "  loss              linear: the fit minimised chi2\n";
  } else {
    out += fmt::format(
        "  loss              {}, f_scale {:g} (c2 units): the fit minimised "
        "sum w·(f_scale/sigma)^2·rho((r/f_scale)^2) = {:.10g} (chi2 is the plain sum "
        "w·(r/sigma)^2)\n",
        f.loss, f.f_scale, f.loss_objective);
  }
  out += fmt::format("  per-angle scaling {} ({} optimised parameters)\n", f.per_angle_mode,
                     r.n_optimised);
  for (std::size_t i = 0; i < f.physical_names.size(); ++i) {
    if (f.IsHeld(i)) {
      out += fmt::format("  {:<18}{:>16.8g}   (held, not fitted)\n", f.physical_names[i],
                         f.physical_values[i]);
      continue;
    }
    out += fmt::format("  {:<18}{:>16.8g} ± {:.3g}\n", f.physical_names[i], f.physical_values[i],
                       f.physical_uncertainties[i]);
  }
  out += fmt::format("  {:<18}{:>16.8g}   (mean over {} angles)\n", "contrast", Mean(f.contrast),
                     f.contrast.size());
  out += fmt::format("  {:<18}{:>16.8g}   (mean over {} angles)\n", "offset", Mean(f.offset),
                     f.offset.size());
  if (f.global_search) {
    const nlsq::GlobalSearchReport& g = *f.global_search;
    if (g.cmaes_skipped) {
      out += fmt::format("  global search     skipped (warm start reduced chi2 {:.4g})\n",
                         g.warmstart_reduced_chi2);
    } else {
      out += fmt::format(
          "  global search     CMA-ES: {} generations, {} evaluations, {} restart(s), {:.1f} s; "
          "selected {}\n",
          g.generations, g.evaluations, g.restarts, g.global_search_time_s, g.selected);
    }
  }
  for (const std::string& a : f.recovery_actions) {
    out += fmt::format("  recovery          {}\n", a);
  }
  if (f.anti_degeneracy.hierarchical_active && f.anti_degeneracy.two_stage_stages > 0) {
    out += fmt::format(
        "  anti-degeneracy   two stages: chi2 {:.6g} with the quantile scaling, {:.6g} joint; {}\n",
        f.anti_degeneracy.stage1_chi_squared, f.anti_degeneracy.stage2_chi_squared,
        f.anti_degeneracy.selected == "hierarchical" ? "its answer was kept"
                                                     : "the plain fit was kept");
  } else if (f.anti_degeneracy.hierarchical_active) {
    out += fmt::format("  anti-degeneracy   hierarchical stage: {} outer iteration(s) ({}), {}{}\n",
                       f.anti_degeneracy.outer_iterations, f.anti_degeneracy.stop,
                       f.anti_degeneracy.shear_weights.empty() ? "unweighted" : "shear-weighted",
                       f.anti_degeneracy.selected == "hierarchical" ? "; its answer was kept"
                                                                    : "; the plain fit was kept");
  } else if (f.anti_degeneracy.skipped_by_trigger) {
    // A config that enables the stage learns why it did not run.
    out += fmt::format("  anti-degeneracy   not run: {}\n", f.anti_degeneracy.inactive_reason);
  }
  if (f.regularization.active) {
    out += fmt::format(
        "  regularization    CV rows of the per-angle scaling (lambda {:.6g}): chi2 {:.10g} with "
        "them, {:.10g} the data's\n",
        f.regularization.lambda, f.regularization.total_chi_squared,
        f.regularization.data_chi_squared);
  }
  out += FormatDegeneracyLines(f.degeneracy);
  out += "=============================================================\n";
  return out;
}

std::string FormatTruthComparison(const nlsq::NlsqRunResult& r, const synth::SynthTruth& t) {
  const nlsq::FitReport& f = r.report;
  std::string out = "\nSynthetic data: truth vs fit\n";
  out +=
      fmt::format("  {:<18}{:>14}{:>14}{:>12}{:>10}\n", "parameter", "truth", "fit", "σ", "|Δ|/σ");
  for (std::size_t i = 0; i < f.physical_names.size() && i < t.physical.size(); ++i) {
    const double sigma = f.physical_uncertainties[i];
    const double z =
        sigma > 0 ? std::abs(f.physical_values[i] - t.physical[i]) / sigma : std::nan("");
    out += fmt::format("  {:<18}{:>14.6g}{:>14.6g}{:>12.3g}{:>10.2f}\n", f.physical_names[i],
                       t.physical[i], f.physical_values[i], sigma, z);
    // The equally good minima of this parameter, each against the truth.
    for (const nlsq::EquivalentMinimum& m : f.degeneracy.equivalent_minima) {
      if (m.parameter != f.physical_names[i]) continue;
      out +=
          fmt::format("  {:<18}{:>14}{:>14.6g}{:>12}{:>10.2f}\n", "  (equally good)", "", m.value,
                      "", sigma > 0 ? std::abs(m.value - t.physical[i]) / sigma : std::nan(""));
    }
  }
  out += fmt::format("  {:<18}{:>14.6g}{:>14.6g}\n", "contrast (mean)", Mean(t.contrast),
                     Mean(f.contrast));
  out +=
      fmt::format("  {:<18}{:>14.6g}{:>14.6g}\n", "offset (mean)", Mean(t.offset), Mean(f.offset));
  return out;
}

std::string FormatCmcSummary(const cmc::CmcRunResult& r) {
  std::string out = "\n================ CMC SAMPLING COMPLETE ================\n";
  out += fmt::format("  shards × chains    {} × {} ({} warmup + {} draws each), {:.1f} s\n",
                     r.num_shards, r.num_chains, r.num_warmup, r.num_samples, r.seconds);
  out += fmt::format("  per-angle scaling  {}\n", r.per_angle_mode);
  out += fmt::format("  max R-hat          {:.4f}   min ESS {:.0f}   acceptance {:.2f}   {}\n",
                     r.max_rhat, r.min_ess, r.acceptance_rate,
                     r.all_converged ? "converged"
                                     : fmt::format("NOT converged (R-hat ≥ {:.3g} or ESS < {:.0f})",
                                                   r.rhat_threshold, r.ess_threshold));
  double c = 0, o = 0;
  int n = 0;
  for (const auto& p : r.parameters) {
    if (p.name.rfind("contrast_", 0) == 0) {
      c += p.mean;
      ++n;
    } else if (p.name.rfind("offset_", 0) == 0) {
      o += p.mean;
    } else {
      out += fmt::format("  {:<18}{:>16.8g} ± {:.3g}\n", p.name, p.mean, p.std);
    }
  }
  if (n > 0) {
    out += fmt::format("  {:<18}{:>16.8g}   (mean over {} angles)\n", "contrast", c / n, n);
    out += fmt::format("  {:<18}{:>16.8g}   (mean over {} angles)\n", "offset", o / n, n);
  }
  out += "=======================================================\n";
  return out;
}

std::string FormatCmcTruthComparison(const cmc::CmcRunResult& r, const synth::SynthTruth& t) {
  std::string out = "\nSynthetic data: truth vs CMC posterior\n";
  out += fmt::format("  {:<18}{:>14}{:>14}{:>12}{:>10}\n", "parameter", "truth", "mean", "std",
                     "|Δ|/std");
  for (std::size_t i = 0; i < t.physical_names.size(); ++i) {
    for (const auto& p : r.parameters) {
      if (p.name != t.physical_names[i]) continue;
      const double z = p.std > 0 ? std::abs(p.mean - t.physical[i]) / p.std : std::nan("");
      out += fmt::format("  {:<18}{:>14.6g}{:>14.6g}{:>12.3g}{:>10.2f}\n", p.name, t.physical[i],
                         p.mean, p.std, z);
    }
  }
  return out;
}

}  // namespace homodyne
