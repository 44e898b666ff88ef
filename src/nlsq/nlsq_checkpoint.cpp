#include "nlsq/nlsq_checkpoint.h"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "checkpoint/interrupt.h"
#include "core/error.h"
#include "parallel/collective.h"

namespace homodyne::checkpoint {

CheckpointSettings CheckpointSettings::FromConfig(const config::Config& cfg,
                                                  const std::string& dir_override, bool resume_flag,
                                                  std::string config_description) {
  const config::StreamingOptions& s = cfg.optimization.streaming;
  CheckpointSettings c;
  c.enabled = s.enable_checkpoints || !dir_override.empty();
  c.resume = resume_flag || s.resume_from_checkpoint;
  c.dir = std::filesystem::path(dir_override.empty() ? s.checkpoint_dir : dir_override);
  c.frequency = s.checkpoint_frequency;
  c.keep_last = s.keep_last_checkpoints;
  c.config_description = std::move(config_description);
  c.Validate();
  return c;
}

void CheckpointSettings::Validate() const {
  const std::string k = "optimization.streaming.";
  if (frequency < 1) {
    ThrowBadInput(fmt::format("checkpoint_frequency must be ≥ 1 (got {})", frequency), {},
                  k + "checkpoint_frequency");
  }
  if (keep_last < 1) {
    ThrowBadInput(fmt::format("keep_last_checkpoints must be ≥ 1 (got {})", keep_last), {},
                  k + "keep_last_checkpoints");
  }
  if (dir.empty()) ThrowBadInput("checkpoint_dir is empty", {}, k + "checkpoint_dir");
}

void NlsqSolverState::Store(CheckpointRecord& r, const std::string& p) const {
  r.PutText(p + "tag", tag);
  r.PutInts(p + "counters",
            {iteration, evaluations, objective_evaluations, finished ? 1 : 0, termination});
  r.PutDoubles(p + "x", x);
  r.PutDouble(p + "trust_radius", trust_radius);
  r.PutDouble(p + "chi2", equations.chi2);
  r.PutDoubles(p + "gradient", equations.gradient);
  r.PutDoubles(p + "hessian", equations.hessian);
  r.PutInt(p + "n_points", equations.n_points);
  r.PutDoubles(p + "chi2_history", chi2_history);
  r.PutText(p + "message", message);
}

NlsqSolverState NlsqSolverState::Load(const CheckpointRecord& r, const std::string& p) {
  NlsqSolverState s;
  s.tag = r.Text(p + "tag");
  const auto& c = r.Ints(p + "counters");
  HOMODYNE_CHECK(c.size() == 5, "NLSQ checkpoint counters have the wrong size");
  s.iteration = static_cast<int>(c[0]);
  s.evaluations = static_cast<int>(c[1]);
  s.objective_evaluations = static_cast<int>(c[2]);
  s.finished = c[3] != 0;
  s.termination = static_cast<int>(c[4]);
  s.x = r.Doubles(p + "x");
  s.trust_radius = r.Double(p + "trust_radius");
  s.equations.chi2 = r.Double(p + "chi2");
  s.equations.gradient = r.Doubles(p + "gradient");
  s.equations.hessian = r.Doubles(p + "hessian");
  s.equations.n_points = r.Int(p + "n_points");
  s.chi2_history = r.Doubles(p + "chi2_history");
  s.message = r.Text(p + "message");
  return s;
}

nlsq::SolverSummary SolveWithCheckpoints(
    const Comm& comm, nlsq::LeastSquaresProblem& problem, const std::vector<double>& x0,
    const std::vector<double>& lower, const std::vector<double>& upper,
    const nlsq::SolverOptions& options, const nlsq::IterationCallback& callback,
    const CheckpointSettings& settings, const std::string& data_description, const Logger& logger) {
  const auto t0 = std::chrono::steady_clock::now();
  settings.Validate();
  CheckpointStore store(comm, {settings.dir, "nlsq", settings.keep_last},
                        {settings.config_description, data_description}, logger);
  NlsqSolverState st;
  st.tag = "fit";
  st.x = x0;
  bool have_equations = false;
  if (settings.resume) {
    if (auto loaded = store.LoadNewest()) {
      NlsqSolverState s = NlsqSolverState::Load(loaded->record, "nlsq.");
      if (s.x.size() != x0.size()) {
        RunCollectively(comm, [&] {
          ThrowBadInput(
              fmt::format("the checkpoint has {} parameters, this run {}", s.x.size(), x0.size()),
              loaded->path.string(), "nlsq.x");
        });
      }
      st = std::move(s);
      have_equations = true;
      logger.Info("resuming NLSQ from {} (iteration {}, chi2 {:.10g}; written on {} rank(s))",
                  loaded->path.string(), st.iteration, st.equations.chi2, loaded->ranks_at_write);
    } else {
      logger.Info("resume: no checkpoint in {}; starting from the beginning",
                  settings.dir.string());
    }
  }

  auto record_of = [&] {
    CheckpointRecord r;
    st.Store(r, "nlsq.");
    return r;
  };
  nlsq::SolverSummary last;
  for (;;) {
    nlsq::SolverOptions so = options;
    const int remaining = std::max(1, options.max_iterations - st.iteration);
    so.max_iterations =
        settings.enabled
            ? std::min(remaining, settings.frequency - st.iteration % settings.frequency)
            : remaining;
    nlsq::SolverStart start;
    start.iteration_offset = st.iteration;
    start.trust_radius = st.iteration > 0 ? st.trust_radius : 0.0;
    start.equations_at_x0 = have_equations ? &st.equations : nullptr;
    start.stateless_preconditioner = settings.enabled || settings.resume;
    start.stop = [&](int it) {
      MaybeKill("nlsq_iter", it);
      MaybeSignal("nlsq_iter", it, comm.rank());
      MaybePause("nlsq_iter", it);
      return settings.stop_on_signal && AgreeOnStop(comm);
    };
    last = nlsq::SolveBounded(problem, st.x, lower, upper, so, callback, start);
    if (st.iteration == 0) {
      st.chi2_history = last.chi2_history;
    } else {
      st.chi2_history.insert(st.chi2_history.end(), last.chi2_history.begin(),
                             last.chi2_history.end());
    }
    st.iteration += last.iterations;
    st.x = last.x;
    st.trust_radius = last.trust_radius;
    st.equations = last.final_equations;
    st.evaluations += last.evaluations;
    st.objective_evaluations += last.objective_evaluations;
    have_equations = true;
    if (last.stopped) {
      const auto path = store.Write(record_of());
      throw Error(ErrorKind::kCheckpointed, ResumeMessage(path.string())).MarkAgreed();
    }
    const bool segment_end = last.termination == nlsq::Termination::kMaxIterations &&
                             st.iteration < options.max_iterations;
    if (settings.enabled && segment_end) {
      const auto path = store.Write(record_of());
      logger.Debug("checkpoint {} (iteration {})", path.string(), st.iteration);
      continue;
    }
    break;
  }
  last.iterations = st.iteration;
  last.chi2_history = st.chi2_history;
  if (!st.chi2_history.empty()) last.initial_chi2 = st.chi2_history.front();
  last.evaluations = st.evaluations;
  last.objective_evaluations = st.objective_evaluations;
  last.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (store.writes() > 0) {
    logger.Debug("{} checkpoint(s) written in {:.3f} s", store.writes(), store.write_seconds());
  }
  return last;
}

}  // namespace homodyne::checkpoint
