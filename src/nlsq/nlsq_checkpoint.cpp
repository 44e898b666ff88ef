#include "nlsq/nlsq_checkpoint.h"

#include <optional>

#include <fmt/format.h>

#include "checkpoint/interrupt.h"
#include "config/key_paths.h"
#include "core/errors.h"
#include "parallel/collective.h"

namespace homodyne::checkpoint {

CheckpointSettings CheckpointSettings::FromConfig(const config::Config& cfg,
                                                  const std::string& dir_override, bool resume_flag,
                                                  std::string config_description,
                                                  const std::filesystem::path& output_dir) {
  const config::StreamingOptions& s = cfg.optimization.streaming;
  CheckpointSettings c;
  c.enabled = s.enable_checkpoints || !dir_override.empty();
  c.resume = resume_flag || s.resume_from_checkpoint;
  if (!dir_override.empty()) {
    c.dir = dir_override;
  } else {
    c.dir = std::filesystem::path(s.checkpoint_dir);
    if (c.dir.is_relative() && !output_dir.empty()) c.dir = (output_dir / c.dir).lexically_normal();
  }
  c.frequency = s.checkpoint_frequency;
  c.keep_last = s.keep_last_checkpoints;
  c.fatal_write_errors = s.fatal_checkpoint_errors;
  c.config_description = std::move(config_description);
  c.Validate();
  return c;
}

void CheckpointSettings::Validate() const {
  const auto k = [](std::string_view leaf) {
    return config::keys::Key(config::keys::kStreaming, leaf);
  };
  if (frequency < 1) {
    ThrowBadInput(fmt::format("checkpoint_frequency must be ≥ 1 (got {})", frequency), {},
                  k("checkpoint_frequency"));
  }
  if (keep_last < 1) {
    ThrowBadInput(fmt::format("keep_last_checkpoints must be ≥ 1 (got {})", keep_last), {},
                  k("keep_last_checkpoints"));
  }
  if (dir.empty()) ThrowBadInput("checkpoint_dir is empty", {}, k("checkpoint_dir"));
}

void NlsqSolverState::Store(CheckpointRecord& r, const std::string& p) const {
  const lsq::SolverState& s = solver;
  r.PutText(p + "tag", tag);
  r.PutInts(p + "counters",
            {s.iteration, s.evaluations, s.objective_evaluations, s.recoveries, finished ? 1 : 0});
  r.PutDoubles(p + "x", s.x);
  r.PutDouble(p + "lambda", s.lambda);
  r.PutDouble(p + "nu", s.nu);
  r.PutDoubles(p + "scale", s.scale);
  r.PutDouble(p + "chi2", s.equations.chi2);
  r.PutDoubles(p + "gradient", s.equations.gradient);
  r.PutDoubles(p + "hessian", s.equations.hessian);
  r.PutInt(p + "n_points", s.equations.n_points);
  r.PutDoubles(p + "chi2_history", s.chi2_history);
}

NlsqSolverState NlsqSolverState::Load(const CheckpointRecord& r, const std::string& p) {
  NlsqSolverState out;
  lsq::SolverState& s = out.solver;
  out.tag = r.Text(p + "tag");
  const auto& c = r.Ints(p + "counters");
  HOMODYNE_CHECK(c.size() == 5, "NLSQ checkpoint counters have the wrong size");
  s.iteration = static_cast<int>(c[0]);
  s.evaluations = static_cast<int>(c[1]);
  s.objective_evaluations = static_cast<int>(c[2]);
  s.recoveries = static_cast<int>(c[3]);
  out.finished = c[4] != 0;
  s.x = r.Doubles(p + "x");
  s.lambda = r.Double(p + "lambda");
  s.nu = r.Double(p + "nu");
  s.scale = r.Doubles(p + "scale");
  s.equations.chi2 = r.Double(p + "chi2");
  s.equations.gradient = r.Doubles(p + "gradient");
  s.equations.hessian = r.Doubles(p + "hessian");
  s.equations.n_points = r.Int(p + "n_points");
  s.chi2_history = r.Doubles(p + "chi2_history");
  const std::size_t n = s.x.size();
  HOMODYNE_CHECK(s.scale.size() == n && s.equations.gradient.size() == n &&
                     s.equations.hessian.size() == n * n,
                 "NLSQ checkpoint arrays have inconsistent sizes");
  return out;
}

lsq::SolverSummary SolveWithCheckpoints(
    const Comm& comm, lsq::LeastSquaresProblem& problem, const std::vector<double>& x0,
    const std::vector<double>& lower, const std::vector<double>& upper,
    const lsq::SolverOptions& options, const lsq::IterationCallback& callback,
    const CheckpointSettings& settings, const std::string& data_description, const Logger& logger) {
  settings.Validate();
  if (settings.enabled && options.UsesTao()) {
    RunCollectively(comm, [&] {
      ThrowBadInput(fmt::format("checkpoints need local_solver: lm (got {}; the internal state of "
                                "PETSc/TAO's methods cannot be saved, so a resumed fit would "
                                "take other steps)",
                                lsq::ToString(options.method)),
                    {}, config::keys::Key(config::keys::kNlsq, "local_solver"));
    });
  }
  CheckpointStore store(comm, {settings.dir, "nlsq", settings.keep_last},
                        {settings.config_description, data_description}, logger);
  std::optional<NlsqSolverState> resumed;
  if (settings.resume) {
    if (auto loaded = store.LoadNewest()) {
      NlsqSolverState s = NlsqSolverState::Load(loaded->record, "nlsq.");
      if (s.solver.x.size() != x0.size()) {
        RunCollectively(comm, [&] {
          ThrowBadInput(fmt::format("the checkpoint has {} parameters, this run {}",
                                    s.solver.x.size(), x0.size()),
                        loaded->path.string(), "nlsq.x");
        });
      }
      logger.Info("resuming NLSQ from {} (iteration {}, chi2 {:.10g}; written on {} rank(s))",
                  loaded->path.string(), s.solver.iteration, s.solver.equations.chi2,
                  loaded->ranks_at_write);
      resumed = std::move(s);
    } else {
      logger.Info("resume: no checkpoint of this run in {}; starting from the beginning",
                  store.options().dir.string());
    }
  }

  auto record = [&](const lsq::SolverState& s, bool finished) {
    CheckpointRecord r;
    NlsqSolverState{"fit", s, finished}.Store(r, "nlsq.");
    return r;
  };
  lsq::SolverHooks hooks;
  if (resumed) hooks.resume = &resumed->solver;
  // The state a stop request inside a data pass saves: the last complete one (the start, or
  // the last accepted step). Resumed from it, the solve repeats the cut pass and goes on
  // with the same steps.
  std::optional<lsq::SolverState> last;
  if (resumed) last = resumed->solver;
  hooks.at_start = [&](const lsq::SolverState& s) { last = s; };
  hooks.after_iteration = [&](const lsq::SolverState& s) {
    last = s;
    MaybeKill("nlsq_iter", s.iteration);
    MaybeSignal("nlsq_iter", s.iteration, comm.rank());
    MaybePause("nlsq_iter", s.iteration);
    const bool stop = settings.stop_on_signal && AgreeOnStop(comm);
    if (stop) {  // the exit code promises a checkpoint: its write must succeed
      const auto path = store.Write(record(s, false));
      throw MarkAgreed(Error(ErrorKind::kCheckpointed, ResumeMessage(path.string())));
    }
    if (settings.enabled && s.iteration % settings.frequency == 0) {
      if (const auto path = store.TryWrite(record(s, false), settings.fatal_write_errors)) {
        logger.Debug("checkpoint {} (iteration {})", path->string(), s.iteration);
      }
    }
  };
  // Passes end within one block of a stop request once there is a state to save (the first
  // pass at the start runs to its end). PETSc/TAO's state cannot be saved: its passes are
  // not cut, and a stop waits for the iteration's end.
  struct StopCheck {
    lsq::LeastSquaresProblem& problem;
    ~StopCheck() { problem.SetStopCheck({}); }
  } stop_check{problem};
  if (settings.stop_on_signal && !options.UsesTao()) {
    problem.SetStopCheck([&last] { return last.has_value() && LocalStopSignal() != 0; });
  }
  lsq::SolverSummary summary;
  try {
    summary = lsq::SolveBounded(problem, x0, lower, upper, options, callback, hooks);
  } catch (const lsq::PassInterrupted&) {
    const auto path = store.Write(record(*last, false));
    throw MarkAgreed(Error(ErrorKind::kCheckpointed, ResumeMessage(path.string())));
  }
  if (settings.enabled && summary.IsUsable() && !options.UsesTao()) {
    // The final state too, so a job stopped while writing its outputs resumes without fitting
    // again (a resumed finished state ends at once with the same answer).
    store.TryWrite(record(summary.final_state, true), settings.fatal_write_errors);
  }
  if (store.writes() > 0) {
    logger.Debug("{} checkpoint(s) written in {:.3f} s", store.writes(), store.write_seconds());
  }
  return summary;
}

}  // namespace homodyne::checkpoint
