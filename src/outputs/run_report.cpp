#include "outputs/run_report.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "config/config_bridge.h"
#include "config/config_reader.h"
#include "core/atomic_file.h"
#include "core/clock.h"
#include "core/errors.h"
#include "core/fnv1a.h"
#include "core/library_versions.h"
#include "io/dataset.h"
#include "nlsq/memory_plan.h"
#include "outputs/nlsq_result_files.h"

namespace homodyne {
namespace {

std::uint64_t HashDoubles(const std::vector<double>& v) {
  // The bits of each value, least significant byte first, as the fingerprints already stored.
  std::uint64_t h = kFnv1aShortBasis;
  for (double d : v) {
    std::uint64_t bits = 0;
    std::memcpy(&bits, &d, sizeof(bits));
    unsigned char bytes[8];
    for (int b = 0; b < 8; ++b) bytes[b] = static_cast<unsigned char>(bits >> (8 * b));
    h = Fnv1a(bytes, sizeof(bytes), h);
  }
  return h;
}

void EmitNumberOrNull(YAML::Emitter& y, double v) {
  if (std::isfinite(v)) {
    y << v;
  } else {
    y << YAML::Null;
  }
}

// What the report needs of every rank, gathered on rank 0 (collective).
struct RankFacts {
  std::vector<std::string> names;        // the phases, rank 0's
  std::vector<double> vmin, vmax, vsum;  // per phase over the ranks
  int any_mismatch = 0;                  // 1: some rank holds other result bits than rank 0
  double since_start_max = 0.0;          // the longest time since a process started
  std::vector<std::uint64_t> peaks;      // every rank's peak resident size (VmHWM)
};

RankFacts GatherRankFacts(const Comm& world, const RunReportInput& in) {
  RankFacts f;
  // Phase times: rank 0's phase names, every rank's values, min/max/sum.
  std::string names_joined;
  if (world.is_root()) {
    for (const auto& [name, s] : in.phases.seconds()) names_joined += name + "\n";
  }
  int names_len = static_cast<int>(names_joined.size());
  MPI_Bcast(&names_len, 1, MPI_INT, 0, world.get());
  names_joined.resize(static_cast<std::size_t>(names_len));
  MPI_Bcast(names_joined.data(), names_len, MPI_CHAR, 0, world.get());
  for (std::size_t a = 0, b; (b = names_joined.find('\n', a)) != std::string::npos; a = b + 1) {
    f.names.push_back(names_joined.substr(a, b - a));
  }
  std::vector<double> values;
  for (const auto& n : f.names) {
    values.push_back(in.phases.Of(n));
  }
  f.vmin.resize(values.size());
  f.vmax.resize(values.size());
  f.vsum.resize(values.size());
  const int nv = static_cast<int>(values.size());
  MPI_Reduce(values.data(), f.vmin.data(), nv, MPI_DOUBLE, MPI_MIN, 0, world.get());
  MPI_Reduce(values.data(), f.vmax.data(), nv, MPI_DOUBLE, MPI_MAX, 0, world.get());
  MPI_Reduce(values.data(), f.vsum.data(), nv, MPI_DOUBLE, MPI_SUM, 0, world.get());

  // Self-check: every rank that holds the result holds the same bits.
  std::uint64_t hash =
      in.nlsq != nullptr && !in.nlsq->expanded.empty() ? HashDoubles(in.nlsq->expanded) : 0;
  std::uint64_t root_hash = hash;
  MPI_Bcast(&root_hash, 1, MPI_UINT64_T, 0, world.get());
  int mismatch = (hash != 0 && hash != root_hash) ? 1 : 0;
  MPI_Allreduce(&mismatch, &f.any_mismatch, 1, MPI_INT, MPI_MAX, world.get());
  // Time since each process started: the whole job up to this report.
  double since_start = SecondsSinceProcessStart();
  if (!std::isfinite(since_start)) since_start = 0.0;
  MPI_Reduce(&since_start, &f.since_start_max, 1, MPI_DOUBLE, MPI_MAX, 0, world.get());
  // Peak resident size of every rank so far (VmHWM).
  const auto peak = static_cast<std::uint64_t>(nlsq::PeakRss());
  f.peaks.assign(static_cast<std::size_t>(world.size()), 0);
  MPI_Gather(&peak, 1, MPI_UINT64_T, f.peaks.data(), 1, MPI_UINT64_T, 0, world.get());
  return f;
}

// The program, its command line and how the run ended.
void EmitRun(YAML::Emitter& y, const RunReportInput& in) {
  y << YAML::Key << "homodyne_hpc" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "version" << YAML::Value << std::string(Version());
  y << YAML::Key << "command_line" << YAML::Value << in.command_line;
  y << YAML::Key << "method" << YAML::Value
    << (in.method ? std::string(config::ToString(*in.method)) : std::string("plot"))
    << YAML::EndMap;

  y << YAML::Key << "status" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "exit_code" << YAML::Value << in.exit_code;
  y << YAML::Key << "result" << YAML::Value << in.status;
  y << YAML::Key << "message" << YAML::Value << in.message;
  y << YAML::Key << "plots" << YAML::Value << in.plots << YAML::EndMap;
}

// The ranks, their threads and where they ran.
void EmitMachine(YAML::Emitter& y, const Comm& world, const RunReportInput& in) {
  y << YAML::Key << "machine" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "ranks" << YAML::Value << world.size();
  y << YAML::Key << "threads_per_rank" << YAML::Value << in.placement.slots.size();
  y << YAML::Key << "pinned" << YAML::Value << in.pinned;
  std::vector<std::string> hosts;
  for (const RankPlacement& p : in.placements) {
    if (std::find(hosts.begin(), hosts.end(), p.host) == hosts.end()) hosts.push_back(p.host);
  }
  y << YAML::Key << "hostnames" << YAML::Value << YAML::Flow << hosts;
  y << YAML::Key << "placement" << YAML::Value << YAML::BeginSeq;
  for (const RankPlacement& p : in.placements) {
    std::vector<int> pus;
    std::vector<int> numas;
    for (const auto& slot : p.plan.slots) {
      pus.push_back(slot.pu_os);
      numas.push_back(slot.numa_node);
    }
    y << YAML::Flow << YAML::BeginMap << YAML::Key << "rank" << YAML::Value << p.rank << YAML::Key
      << "host" << YAML::Value << p.host << YAML::Key << "cpuset" << YAML::Value << p.plan.cpuset
      << YAML::Key << "numa_nodes" << YAML::Value << fmt::format("{}", fmt::join(numas, ","))
      << YAML::Key << "pus" << YAML::Value << fmt::format("{}", fmt::join(pus, ","))
      << YAML::EndMap;
  }
  y << YAML::EndSeq << YAML::EndMap;
}

// The libraries the program runs with.
void EmitLibraries(YAML::Emitter& y) {
  const LibraryVersions v = QueryLibraryVersions();
  y << YAML::Key << "libraries" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "mpi" << YAML::Value << v.mpi;
  y << YAML::Key << "petsc" << YAML::Value << v.petsc;
  y << YAML::Key << "hdf5" << YAML::Value << v.hdf5;
  y << YAML::Key << "hdf5_parallel" << YAML::Value << v.hdf5_parallel;
  y << YAML::Key << "yaml_cpp" << YAML::Value << v.yaml_cpp;
  y << YAML::Key << "hwloc" << YAML::Value << v.hwloc;
  y << YAML::Key << "compiler" << YAML::Value << v.compiler;
  y << YAML::Key << "build_type" << YAML::Value << v.build_type << YAML::EndMap;
}

// The config file, its seeds and every key in force.
void EmitConfig(YAML::Emitter& y, const RunReportInput& in) {
  if (in.config != nullptr) {
    y << YAML::Key << "config" << YAML::Value << YAML::BeginMap;
    y << YAML::Key << "file" << YAML::Value << in.config->source;
    y << YAML::Key << "seeds" << YAML::Value << YAML::BeginMap;
    y << YAML::Key << "multi_start" << YAML::Value << in.config->optimization.nlsq.multi_start.seed;
    y << YAML::Key << "cmaes" << YAML::Value << in.config->optimization.nlsq.cmaes.seed;
    y << YAML::Key << "cmc" << YAML::Value << in.config->optimization.cmc.seed << YAML::EndMap;
    y << YAML::Key << "effective" << YAML::Value
      << YAML::Load(config::EffectiveConfigYaml(*in.config));
    y << YAML::EndMap;
  }
}

// The dataset as selected.
void EmitData(YAML::Emitter& y, const RunReportInput& in) {
  if (in.data) {
    const RunDataSummary& d = *in.data;
    y << YAML::Key << "data" << YAML::Value << YAML::BeginMap;
    y << YAML::Key << "file" << YAML::Value << d.file;
    y << YAML::Key << "format" << YAML::Value << d.format;
    y << YAML::Key << "q" << YAML::Value << d.q;
    y << YAML::Key << "angles" << YAML::Value << d.phi_deg.size();
    y << YAML::Key << "phi_deg" << YAML::Value << YAML::Flow << d.phi_deg;
    y << YAML::Key << "frames" << YAML::Value << d.frames;
    y << YAML::Key << "dt" << YAML::Value << d.dt;
    y << YAML::Key << "fitted_points" << YAML::Value << d.fitted_points << YAML::EndMap;
  }
}

// What the data leave undetermined at the answer (nlsq/degeneracy.h).
void EmitDegeneracy(YAML::Emitter& y, const nlsq::DegeneracyDiagnostics& dg) {
  y << YAML::Key << "degeneracy" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "correlated_pairs" << YAML::Value << YAML::BeginSeq;
  for (const nlsq::CorrelatedPair& p : dg.correlated) {
    y << YAML::Flow << YAML::BeginMap << YAML::Key << "parameters" << YAML::Value << YAML::Flow
      << std::vector<std::string>{p.first, p.second} << YAML::Key << "correlation" << YAML::Value
      << p.correlation << YAML::EndMap;
  }
  y << YAML::EndSeq;
  y << YAML::Key << "least_identifiable_directions" << YAML::Value << YAML::BeginSeq;
  for (const nlsq::WeakDirection& w : dg.weakest) {
    y << YAML::Flow << YAML::BeginMap << YAML::Key << "relative_eigenvalue" << YAML::Value
      << w.relative_eigenvalue << YAML::Key << "parameters" << YAML::Value << YAML::Flow
      << YAML::BeginMap;
    for (const auto& [name, c] : w.components) y << YAML::Key << name << YAML::Value << c;
    y << YAML::EndMap << YAML::EndMap;
  }
  y << YAML::EndSeq;
  y << YAML::Key << "parameters_at_bounds" << YAML::Value << YAML::Flow << dg.at_bound;
  y << YAML::Key << "equivalent_minima" << YAML::Value << YAML::BeginSeq;
  for (const nlsq::EquivalentMinimum& m : dg.equivalent_minima) {
    y << YAML::Flow << YAML::BeginMap << YAML::Key << "parameter" << YAML::Value << m.parameter
      << YAML::Key << "value" << YAML::Value << m.value << YAML::Key << "answer_value"
      << YAML::Value << m.answer_value << YAML::Key << "objective" << YAML::Value << m.objective
      << YAML::Key << "answer_objective" << YAML::Value << m.answer_objective << YAML::Key
      << "barrier_objective" << YAML::Value << m.barrier_objective << YAML::Key << "on_rows"
      << YAML::Value << m.on_rows << YAML::Key << "found_by" << YAML::Value << m.found_by
      << YAML::EndMap;
  }
  y << YAML::EndSeq;
  y << YAML::Key << "warnings" << YAML::Value << dg.warnings << YAML::EndMap;
}

// The NLSQ answer: its loss, what the data leave undetermined and what the pipeline did.
void EmitNlsqAnswer(YAML::Emitter& y, const nlsq::NlsqRunResult* r) {
  if (r != nullptr && !r->expanded.empty()) {
    // The loss in force and the objective the solver minimised (model/robust_loss.h).
    const nlsq::FitReport& f = r->report;
    y << YAML::Key << "loss" << YAML::Value << YAML::BeginMap;
    y << YAML::Key << "loss" << YAML::Value << f.loss;
    y << YAML::Key << "f_scale" << YAML::Value << f.f_scale;
    y << YAML::Key << "objective_minimised" << YAML::Value << outputs::LossObjectiveText(f);
    y << YAML::Key << "objective_value" << YAML::Value << f.loss_objective;
    y << YAML::Key << "chi_squared" << YAML::Value << f.chi_squared;
    y << YAML::EndMap;
  }
  if (r != nullptr && !r->expanded.empty()) {
    EmitDegeneracy(y, r->report.degeneracy);
    // What the pipeline did beyond the local fit (global/fit_pipeline.h).
    y << YAML::Key << "recovery_actions" << YAML::Value << r->report.recovery_actions;
    const nlsq::AntiDegeneracyReport& a = r->report.anti_degeneracy;
    y << YAML::Key << "anti_degeneracy" << YAML::Value << YAML::BeginMap;
    y << YAML::Key << "per_angle_mode" << YAML::Value << r->report.per_angle_mode;
    y << YAML::Key << "hierarchical_active" << YAML::Value << a.hierarchical_active;
    if (a.hierarchical_active && a.two_stage_stages > 0) {
      y << YAML::Key << "hierarchical_stages" << YAML::Value << a.two_stage_stages;
      y << YAML::Key << "hierarchical_stage1_chi2" << YAML::Value << a.stage1_chi_squared;
      y << YAML::Key << "hierarchical_stage2_chi2" << YAML::Value << a.stage2_chi_squared;
      y << YAML::Key << "stage_chi_squared" << YAML::Value << a.stage_chi_squared;
      y << YAML::Key << "plain_chi_squared" << YAML::Value << a.plain_chi_squared;
      y << YAML::Key << "chi_squared_fields_hold" << YAML::Value
        << outputs::StageValuesText(r->report);
      y << YAML::Key << "selected" << YAML::Value << a.selected;
    } else if (a.hierarchical_active) {
      y << YAML::Key << "outer_iterations" << YAML::Value << a.outer_iterations;
      y << YAML::Key << "stop" << YAML::Value << a.stop;
      y << YAML::Key << "stage_chi_squared" << YAML::Value << a.stage_chi_squared;
      y << YAML::Key << "plain_chi_squared" << YAML::Value << a.plain_chi_squared;
      y << YAML::Key << "chi_squared_fields_hold" << YAML::Value
        << outputs::StageValuesText(r->report);
      y << YAML::Key << "selected" << YAML::Value << a.selected;
      y << YAML::Key << "shear_weights" << YAML::Value << YAML::Flow << a.shear_weights;
    } else {
      y << YAML::Key << "inactive_reason" << YAML::Value << a.inactive_reason;
    }
    // The gradient-collapse monitor in short (the full block: analysis_results_nlsq.json).
    const nlsq::GradientMonitorReport& g = r->report.diagnostics.gradient_monitor;
    y << YAML::Key << "gradient_monitor" << YAML::Value << YAML::Flow << YAML::BeginMap;
    if (g.enabled) {
      y << YAML::Key << "mechanism" << YAML::Value << g.mechanism;
      y << YAML::Key << "n_observations" << YAML::Value << g.n_observations;
      y << YAML::Key << "trigger_count" << YAML::Value << g.trigger_count;
      if (g.n_observations > 0) {
        y << YAML::Key << "collapse_detected" << YAML::Value << g.collapse_detected();
        y << YAML::Key << "min_gradient_ratio" << YAML::Value << g.min_gradient_ratio;
      }
    } else {
      y << YAML::Key << "inactive_reason" << YAML::Value << g.inactive_reason;
    }
    y << YAML::EndMap;
    const nlsq::RegularizationReport& reg = r->report.regularization;
    y << YAML::Key << "regularization_active" << YAML::Value << reg.active;
    if (reg.active) {
      y << YAML::Key << "regularization_mode" << YAML::Value << reg.mode;
      y << YAML::Key << "regularization_lambda_applied" << YAML::Value << reg.lambda;
      y << YAML::Key << "regularization_penalty_count" << YAML::Value << reg.penalty_rows;
      y << YAML::Key << "regularization_data_residual_ssr" << YAML::Value << reg.data_chi_squared;
      y << YAML::Key << "regularization_total_ssr_with_penalty" << YAML::Value
        << reg.total_chi_squared;
    }
    y << YAML::EndMap;
  }
}

// The CMA-ES global stage (global/global_stage.h): what ran, which answer was kept.
void EmitGlobalSearch(YAML::Emitter& y, const nlsq::NlsqRunResult* r) {
  if (r != nullptr && !r->expanded.empty() && r->report.global_search) {
    // The CMA-ES global stage (global/global_stage.h): what ran, which answer was kept.
    const nlsq::GlobalSearchReport& g = *r->report.global_search;
    y << YAML::Key << "global_search" << YAML::Value << YAML::BeginMap;
    y << YAML::Key << "method" << YAML::Value << g.method;
    y << YAML::Key << "selected" << YAML::Value << g.selected;
    y << YAML::Key << "cmaes_skipped" << YAML::Value << g.cmaes_skipped;
    y << YAML::Key << "warmstart_termination" << YAML::Value << g.warmstart_termination;
    y << YAML::Key << "warmstart_chi_squared" << YAML::Value << g.warmstart_chi_squared;
    y << YAML::Key << "warmstart_reduced_chi2" << YAML::Value << g.warmstart_reduced_chi2;
    y << YAML::Key << "scale_ratio" << YAML::Value << g.scale_ratio;
    y << YAML::Key << "generations" << YAML::Value << g.generations;
    y << YAML::Key << "evaluations" << YAML::Value << g.evaluations;
    y << YAML::Key << "restarts" << YAML::Value << g.restarts;
    y << YAML::Key << "convergence_reason" << YAML::Value << g.convergence_reason;
    y << YAML::Key << "restart_strategy" << YAML::Value << g.restart_strategy;
    y << YAML::Key << "popsize" << YAML::Value << g.popsize;
    y << YAML::Key << "run_popsizes" << YAML::Value << YAML::Flow << g.run_popsizes;
    y << YAML::Key << "max_generations" << YAML::Value << g.max_generations;
    y << YAML::Key << "sigma" << YAML::Value << g.sigma;
    y << YAML::Key << "seed" << YAML::Value << g.seed;
    y << YAML::Key << "global_search_time_s" << YAML::Value << g.global_search_time_s;
    y << YAML::Key << "cmaes_chi_squared" << YAML::Value << g.cmaes_chi_squared;
    y << YAML::Key << "search_row_stride" << YAML::Value << g.search_row_stride;
    y << YAML::Key << "refinement" << YAML::Value << g.refinement;
    y << YAML::Key << "refined_chi_squared" << YAML::Value << g.refined_chi_squared;
    y << YAML::Key << "chi_squared_improvement" << YAML::Value << g.chi_squared_improvement;
    y << YAML::Key << "chi_squared_fields_hold" << YAML::Value
      << outputs::StageValuesText(r->report);
    y << YAML::EndMap;
  }
}

// The memory plan of the NLSQ fit and every rank's peak resident size.
void EmitMemory(YAML::Emitter& y, const nlsq::NlsqRunResult* r, const RankFacts& f) {
  y << YAML::Key << "memory" << YAML::Value << YAML::BeginMap;
  if (r != nullptr && !r->expanded.empty() && r->memory.budget.bytes > 0) {
    const nlsq::MemoryPlan& m = r->memory;
    y << YAML::Key << "strategy" << YAML::Value << std::string(nlsq::ToString(m.strategy));
    y << YAML::Key << "reason" << YAML::Value << m.reason;
    y << YAML::Key << "budget_bytes_per_rank" << YAML::Value << m.budget.bytes;
    y << YAML::Key << "budget_source" << YAML::Value << m.budget.source;
    y << YAML::Key << "estimate_bytes_rank0" << YAML::Value << m.chosen().total();
    y << YAML::Key << "in_core_estimate_bytes_rank0" << YAML::Value << m.in_core.total();
    if (m.strategy == nlsq::FitStrategy::kStreaming) {
      y << YAML::Key << "window_points_rank0" << YAML::Value << m.window_points;
    }
  }
  y << YAML::Key << "peak_rss_bytes" << YAML::Value << YAML::Flow << f.peaks << YAML::EndMap;
}

// Every phase's time over the ranks, and the whole job's.
void EmitTiming(YAML::Emitter& y, const Comm& world, const RankFacts& f) {
  y << YAML::Key << "timing_seconds" << YAML::Value << YAML::BeginMap;
  for (std::size_t i = 0; i < f.names.size(); ++i) {
    y << YAML::Key << f.names[i] << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key
      << "min" << YAML::Value << f.vmin[i] << YAML::Key << "max" << YAML::Value << f.vmax[i]
      << YAML::Key << "mean" << YAML::Value << f.vsum[i] / world.size() << YAML::EndMap;
  }
  y << YAML::EndMap;
  // The whole job so far, and what no phase above accounts for (the report itself, waits
  // between phases); the processes' exit (MPI and PETSc finalisation) comes after this.
  double phases_max = 0.0;
  for (double seconds : f.vmax) phases_max += seconds;
  y << YAML::Key << "wall_seconds" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "process_start_to_report" << YAML::Value << f.since_start_max;
  y << YAML::Key << "sum_of_phases_max" << YAML::Value << phases_max;
  y << YAML::Key << "outside_phases" << YAML::Value << f.since_start_max - phases_max;
  y << YAML::EndMap;
}

// The fixed costs' items (rank 0's names), each the slowest rank's, and the slowest rank's
// total (collective; rank 0 holds the result). An item a rank could not measure is NaN.
struct FixedCostFacts {
  std::vector<std::string> names;
  std::vector<double> max;
  double total_max = 0.0;
};

FixedCostFacts GatherFixedCosts(const Comm& world, const RunReportInput& in) {
  FixedCostFacts f;
  std::string joined;
  if (world.is_root()) {
    for (const auto& item : in.fixed_costs) joined += item.first + "\n";
  }
  int length = static_cast<int>(joined.size());
  MPI_Bcast(&length, 1, MPI_INT, 0, world.get());
  joined.resize(static_cast<std::size_t>(length));
  MPI_Bcast(joined.data(), length, MPI_CHAR, 0, world.get());
  for (std::size_t a = 0, b; (b = joined.find('\n', a)) != std::string::npos; a = b + 1) {
    f.names.push_back(joined.substr(a, b - a));
  }
  // Unmeasured (NaN) items go as -1, below every measured time, and come back as NaN.
  std::vector<double> mine;
  double total = 0.0;
  for (const auto& name : f.names) {
    double v = -1.0;
    for (const auto& [n, seconds] : in.fixed_costs) {
      if (n == name && std::isfinite(seconds)) v = seconds;
    }
    mine.push_back(v);
    total += std::max(v, 0.0);
  }
  f.max.resize(mine.size());
  MPI_Reduce(mine.data(), f.max.data(), static_cast<int>(mine.size()), MPI_DOUBLE, MPI_MAX, 0,
             world.get());
  for (double& v : f.max) v = v < 0.0 ? std::nan("") : v;
  MPI_Reduce(&total, &f.total_max, 1, MPI_DOUBLE, MPI_MAX, 0, world.get());
  return f;
}

// What a job pays besides its fit, item by item (docs/performance.md, "Fixed costs").
void EmitFixedCosts(YAML::Emitter& y, const FixedCostFacts& f) {
  if (f.names.empty()) return;
  y << YAML::Key << "fixed_costs" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "seconds_max_over_ranks" << YAML::Value << YAML::BeginMap;
  for (std::size_t i = 0; i < f.names.size(); ++i) {
    y << YAML::Key << f.names[i] << YAML::Value;
    EmitNumberOrNull(y, f.max[i]);
  }
  y << YAML::EndMap;
  y << YAML::Key << "total_seconds" << YAML::Value << f.total_max;
  y << YAML::Key << "after_this_report" << YAML::Value
    << "run_report, PETSc and MPI finalisation: the log's closing 'fixed costs' line";
  y << YAML::EndMap;
}

// passes / accepted steps, null without an accepted step.
void EmitPerStep(YAML::Emitter& y, int passes, int steps) {
  y << YAML::Key << "per_accepted_step" << YAML::Value;
  EmitNumberOrNull(y, steps > 0 ? static_cast<double>(passes) / steps : std::nan(""));
}

// Streamed: rank 0's passes as its stream timed them (nlsq::StreamPassTiming), each to
// 6 significant digits, with the bytes of one pass (the last: after the first, whole passes read
// the same; the first also reads the column blocks a half matrix stored upper does not need).
void EmitStreamTimings(YAML::Emitter& y, const std::vector<nlsq::StreamPassTiming>& passes) {
  y << YAML::Key << "stream_timings" << YAML::Value;
  if (passes.empty()) {
    y << YAML::Null;
    return;
  }
  const auto seconds = [&](double s) { y << YAML::DoublePrecision(6) << s; };
  y << YAML::BeginMap;
  y << YAML::Key << "passes" << YAML::Value << passes.size();
  y << YAML::Key << "bytes_per_pass" << YAML::Value << passes.back().bytes;
  y << YAML::Key << "seconds" << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (const auto& p : passes) seconds(p.seconds);
  y << YAML::EndSeq;
  y << YAML::Key << "read_seconds" << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (const auto& p : passes) seconds(p.read_seconds);
  y << YAML::EndSeq;
  y << YAML::Key << "bytes" << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (const auto& p : passes) y << p.bytes;
  y << YAML::EndSeq;
  y << YAML::Key << "windows" << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (const auto& p : passes) y << p.windows;
  y << YAML::EndSeq;
  y << YAML::Key << "read_ahead_windows" << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (const auto& p : passes) y << p.read_ahead_windows;
  y << YAML::EndSeq;
  y << YAML::EndMap;
}

// Every data pass of the NLSQ session by pipeline stage and kind (nlsq/pass_ledger.h), with
// the steps each stage's solves accepted. A streamed pass reads the rank's share of the file
// once (row_subset passes excepted), so `stream_reads` — counted by the stream itself —
// equals the total less the row-subset passes.
void EmitPasses(YAML::Emitter& y, const nlsq::NlsqRunResult& r) {
  std::array<int, nlsq::kNumPassKinds> kinds{};
  int total = 0, steps = 0;
  for (const nlsq::StagePasses& s : r.pass_stages) {
    for (std::size_t k = 0; k < kinds.size(); ++k) kinds[k] += s.by_kind[k];
    total += s.total();
    steps += s.accepted_steps;
  }
  const auto emit_kinds = [&y](const std::array<int, nlsq::kNumPassKinds>& by_kind) {
    for (std::size_t k = 0; k < by_kind.size(); ++k) {
      y << YAML::Key << std::string(nlsq::ToString(static_cast<nlsq::PassKind>(k))) << YAML::Value
        << by_kind[k];
    }
  };
  y << YAML::Key << "passes" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "total" << YAML::Value << total;
  y << YAML::Key << "accepted_steps" << YAML::Value << steps;
  EmitPerStep(y, total, steps);
  y << YAML::Key << "stream_reads" << YAML::Value;
  if (r.stream_reads >= 0) {
    y << r.stream_reads;
  } else {
    y << YAML::Null;
  }
  EmitStreamTimings(y, r.stream_passes);
  y << YAML::Key << "by_kind" << YAML::Value << YAML::Flow << YAML::BeginMap;
  emit_kinds(kinds);
  y << YAML::EndMap;
  y << YAML::Key << "by_stage" << YAML::Value << YAML::BeginSeq;
  for (const nlsq::StagePasses& s : r.pass_stages) {
    y << YAML::Flow << YAML::BeginMap;
    y << YAML::Key << "stage" << YAML::Value << s.stage;
    y << YAML::Key << "total" << YAML::Value << s.total();
    emit_kinds(s.by_kind);
    y << YAML::Key << "accepted_steps" << YAML::Value << s.accepted_steps;
    EmitPerStep(y, s.total(), s.accepted_steps);
    y << YAML::EndMap;
  }
  y << YAML::EndSeq;
  y << YAML::EndMap;
}

// Points, passes and draws per second.
void EmitThroughput(YAML::Emitter& y, const Comm& world, const RunReportInput& in) {
  const nlsq::NlsqRunResult* r = in.nlsq;
  const bool have_nlsq = r != nullptr && !r->expanded.empty();
  if (have_nlsq || in.cmc != nullptr)
    y << YAML::Key << "throughput" << YAML::Value << YAML::BeginMap;
  if (have_nlsq) {
    const double fit_s = in.phases.Of("fit");
    const double cores = static_cast<double>(world.size()) *
                         static_cast<double>(std::max<std::size_t>(1, in.placement.slots.size()));
    y << YAML::Key << "data_passes" << YAML::Value << r->passes;
    y << YAML::Key << "iterations" << YAML::Value << r->summary.iterations;
    y << YAML::Key << "gradient_evaluations" << YAML::Value << r->summary.evaluations;
    y << YAML::Key << "points_per_second" << YAML::Value;
    EmitNumberOrNull(
        y, fit_s > 0 ? static_cast<double>(r->unique_pairs) * r->passes / fit_s : std::nan(""));
    y << YAML::Key << "points_per_second_per_core" << YAML::Value;
    EmitNumberOrNull(y, fit_s > 0
                            ? static_cast<double>(r->unique_pairs) * r->passes / (fit_s * cores)
                            : std::nan(""));
    y << YAML::Key << "gradient_evaluations_per_second" << YAML::Value;
    EmitNumberOrNull(y, fit_s > 0 ? r->summary.evaluations / fit_s : std::nan(""));
    EmitPasses(y, *r);
  }
  if (in.cmc != nullptr) {
    const cmc::CmcRunResult& c = *in.cmc;
    const double iterations =
        static_cast<double>(c.num_shards) * c.num_chains * (c.num_warmup + c.num_samples);
    y << YAML::Key << "cmc_seconds" << YAML::Value << c.seconds;
    y << YAML::Key << "cmc_draws_per_second" << YAML::Value;
    EmitNumberOrNull(y, c.seconds > 0 ? iterations / c.seconds : std::nan(""));
    y << YAML::Key << "cmc_min_ess" << YAML::Value;
    EmitNumberOrNull(y, c.min_ess);
    y << YAML::Key << "cmc_min_ess_per_second" << YAML::Value;
    EmitNumberOrNull(y, c.seconds > 0 ? c.min_ess / c.seconds : std::nan(""));
  }
  if (have_nlsq || in.cmc != nullptr) y << YAML::EndMap;
}

// The run's own checks of its result.
void EmitSelfChecks(YAML::Emitter& y, const RunReportInput& in, const RankFacts& f) {
  const nlsq::NlsqRunResult* r = in.nlsq;
  y << YAML::Key << "self_checks" << YAML::Value << YAML::BeginSeq;
  auto check = [&](const std::string& name, bool passed) {
    y << YAML::Flow << YAML::BeginMap << YAML::Key << "check" << YAML::Value << name << YAML::Key
      << "result" << YAML::Value << (passed ? "PASSED" : "FAILED") << YAML::EndMap;
  };
  check("results bitwise identical on every rank", f.any_mismatch == 0);
  if (r != nullptr && !r->expanded.empty()) {
    check("chi2 finite", std::isfinite(r->report.chi_squared));
    check("optimiser converged", r->report.convergence_status == "converged");
    check("fit quality without warnings", r->report.quality_passed);
  }
  if (in.cmc != nullptr) {
    const bool finite = std::all_of(in.cmc->draws.begin(), in.cmc->draws.end(),
                                    [](double x) { return std::isfinite(x); });
    check("CMC draws finite", finite && !in.cmc->draws.empty());
    check(fmt::format("CMC every shard R-hat < {:.3g} and ESS >= {:.0f}", in.cmc->rhat_threshold,
                      in.cmc->ess_threshold),
          in.cmc->all_converged);
  }
  if (in.plots != "not requested") check("plots written", in.plots == "written");
  y << YAML::EndSeq;
}

}  // namespace

std::optional<RunDataSummary> SummariseData(const config::Config& cfg, const std::string& data_file,
                                            const nlsq::NlsqRunResult* r) {
  RunDataSummary d;
  if (r != nullptr && !r->expanded.empty()) {
    d.file = r->data_file;
    d.format = r->data_format;
    d.q = r->q;
    d.phi_deg = r->phi_deg;
    d.frames = static_cast<std::int64_t>(r->t_full.size());
    d.dt = r->dt;
    d.fitted_points = r->unique_pairs;
    return d;
  }
  try {
    const io::DatasetMetadata meta =
        io::ReadDatasetMetadata(LoadOptionsFromConfig(cfg, data_file), Logger::Silent());
    d.file = meta.file;
    d.format = meta.format == io::DataFormat::kApsU ? "aps_u" : "aps_old";
    d.q = meta.q_physics;
    d.phi_deg = meta.phi_values();
    d.frames = meta.n_frames;
    d.dt = meta.dt;
    const std::int64_t n = std::max<std::int64_t>(meta.n_frames - 1, 0);
    d.fitted_points = static_cast<std::int64_t>(meta.n_angles()) * n * (n - 1) / 2;
    return d;
  } catch (const Error&) {
    return std::nullopt;
  }
}

std::string WriteRunReport(const Comm& world, const std::filesystem::path& dir,
                           const RunReportInput& in) {
  const RankFacts facts = GatherRankFacts(world, in);
  const FixedCostFacts fixed = GatherFixedCosts(world, in);
  if (!world.is_root()) return {};

  YAML::Emitter y;
  y << YAML::BeginMap;
  EmitRun(y, in);
  EmitMachine(y, world, in);
  EmitLibraries(y);
  EmitConfig(y, in);
  EmitData(y, in);
  EmitNlsqAnswer(y, in.nlsq);
  EmitGlobalSearch(y, in.nlsq);
  EmitMemory(y, in.nlsq, facts);
  EmitTiming(y, world, facts);
  EmitFixedCosts(y, fixed);
  EmitThroughput(y, world, in);
  EmitSelfChecks(y, in, facts);
  y << YAML::EndMap;
  const std::string text = std::string(y.c_str()) + "\n";
  EnsureDirectory(dir);
  WriteFileAtomically(dir / "run_report.yaml", text);
  return text;
}

}  // namespace homodyne
