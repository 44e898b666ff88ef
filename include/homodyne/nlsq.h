// Bounded nonlinear least squares of the homodyne model on XPCS data, distributed over the
// ranks of an MPI communicator (each rank evaluates its share of the points; the
// optimiser runs replicated, so every rank ends with the same answer).
//
//   homodyne::NlsqOptions options;
//   options.mode = homodyne::AnalysisMode::kLaminarFlow;
//   homodyne::NlsqSummary summary = homodyne::FitNlsq(MPI_COMM_WORLD, data, options);
//   std::cout << summary.BriefReport();
#pragma once

#include <mpi.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "homodyne/data.h"
#include "homodyne/export.h"
#include "homodyne/model.h"

namespace homodyne {

// The bounds and start of one parameter; what is left unset keeps its default
// (docs/configuration.md lists the default bounds).
struct ParameterSetting {
  std::string name;  // a physical name (ParameterNames(mode), aliases accepted), or
                     // "contrast" / "offset" for the per-angle scaling of every angle
  std::optional<double> initial;
  std::optional<double> min;
  std::optional<double> max;
  // Held at `initial` (which must be set) instead of fitted: no uncertainty (0), not in the
  // degrees of freedom (a config's initial_parameters.fixed_parameters). Physical
  // parameters only; FitCmc samples the others with it held.
  bool fixed = false;
};

// How contrast/offset vary with the angle in the fit (homodyne's per_angle_mode).
enum class PerAngleScaling { kAuto, kIndividual, kConstant, kFourier };
// "auto", "individual", "constant", "fourier".
HOMODYNE_API std::string_view ToString(PerAngleScaling scaling);

// The per-angle scaling a fit or sampling used, PerAngleScaling resolved on the data.
enum class ScalingLayout {
  kIndividual,        // a contrast and an offset per angle, all free
  kAveraged,          // one contrast and one offset shared by all angles, free (kAuto)
  kFixedConstant,     // per-angle values estimated from the data and held (kConstant)
  kConstantAveraged,  // one shared contrast and offset estimated from the data and held
  kFourier,           // a truncated Fourier series in the angle for each of them
};
// "individual", "auto_averaged", "fixed_constant", "constant_averaged", "fourier" (the
// per_angle_mode of the result files).
HOMODYNE_API std::string_view ToString(ScalingLayout layout);

struct NlsqOptions {
  AnalysisMode mode = AnalysisMode::kStatic;
  double stator_rotor_gap = 2.0e6;  // L [Å] (laminar_flow)
  std::vector<ParameterSetting> parameters;
  PerAngleScaling per_angle = PerAngleScaling::kAuto;
  int max_iterations = 1000;
  double ftol = 1e-8;           // relative χ² change
  double xtol = 1e-8;           // relative step
  double gtol = 1e-8;           // gradient
  int threads = 1;              // compute threads per rank (≥ 1)
  bool print_progress = false;  // rank 0 prints one line per iteration
  // What the fit does when its local answer may not be the minimum (docs/global.md): a
  // stalled local fit is followed by local fits from Latin-hypercube starts of the box, and
  // a laminar_flow answer is checked by local fits restarted with phi0 at this many points
  // of its bounds. The lowest χ² is the answer.
  bool restarts_on_stall = true;
  int phi0_restarts = 4;  // 0: none
  // RequestStop() (config_fit.h) ends the run at its next safe point with homodyne::Error
  // of kind kCheckpointed on every rank; its state is written to stop_directory (empty: a
  // folder "homodyne-stop-<pid of rank 0>" in the system's temporary directory).
  bool stop_on_request = false;
  std::string stop_directory;
  // Throws homodyne::Error (kBadInput) naming the first invalid field.
  HOMODYNE_API void Validate() const;
};

enum class NlsqStatus {
  kConverged,      // the first-order optimality test holds at the answer (docs/errors.md)
  kStalled,        // no step decreases χ² although the test fails: the best point, not an answer
  kMaxIterations,  // stopped at max_iterations: the answer is the last accepted point
  kFailed,         // the solver gave up: the values are not an answer
};
// "converged", "stalled", "max_iter", "failed".
HOMODYNE_API std::string_view ToString(NlsqStatus status);

// How well the answer describes the data, judged on the reduced χ² in units of the data's
// noise level (homodyne's reduced χ² where that level could not be measured): docs/errors.md.
enum class FitQuality {
  kGood,         // consistent with the noise
  kAcceptable,   // above the noise, below the poor threshold
  kPoor,         // far above the noise, or an answer that did not converge
  kNotAssessed,  // no judgement was made
};
// "good", "acceptable", "poor", "not_assessed".
HOMODYNE_API std::string_view ToString(FitQuality quality);

struct ParameterEstimate {
  std::string name;
  double value = 0.0;
  double uncertainty = 0.0;  // one standard deviation from the covariance at the answer
  bool held = false;         // held at `value` (ParameterSetting::fixed): uncertainty 0
};

struct NlsqSummary {
  NlsqStatus status = NlsqStatus::kFailed;
  std::string solver_message;  // the solver's own reason for stopping
  int iterations = 0;
  double chi2 = 0.0;
  double reduced_chi2 = 0.0;  // homodyne's convention (σ = 0.01): not in units of the noise
  // χ² in units of each angle's own noise level (measured from the data) over the degrees of
  // freedom: ≈ 1 at a correct minimum; NaN when the noise level could not be measured.
  double noise_reduced_chi2 = 0.0;
  // Why a converged answer does not describe the data (the CLI's exit 5, docs/errors.md);
  // empty: it does, as far as the quality rules see.
  std::vector<std::string> misfit_reasons;
  long long points = 0;  // fitted (t1 < t2) pairs over all angles
  std::vector<ParameterEstimate> physical;
  std::vector<double> phi_deg;
  std::vector<ParameterEstimate> contrast;                       // one per angle
  std::vector<ParameterEstimate> offset;                         // one per angle
  ScalingLayout per_angle_scaling = ScalingLayout::kIndividual;  // the layout the fit used
  FitQuality quality = FitQuality::kNotAssessed;
  std::vector<std::string> warnings;  // parameters at a bound, poor fit, degenerate pairs, …
  std::vector<std::string> recovery_actions;  // global search after a stall, phi0 check
  int ranks = 1;
  int threads_per_rank = 1;
  double seconds = 0.0;

  HOMODYNE_API std::string BriefReport() const;  // one line: status, iterations, χ², time
  HOMODYNE_API std::string FullReport() const;   // every parameter with its uncertainty, warnings
};

// Collective over `comm`: every rank passes the same data and options and receives the
// same summary. Needs MPI and PETSc initialised: construct a homodyne::Session first
// (session.h). Bad options or data throw homodyne::Error (kBadInput) on every rank alike.
HOMODYNE_API NlsqSummary FitNlsq(MPI_Comm comm, const XpcsData& data, const NlsqOptions& options);
// The same fit of matrices held by the caller, read in place: the fit keeps its share of
// the fitted (upper-triangle) points, not a copy of the matrices. Every rank's view shows
// the same values. Bit for bit the fit of the XpcsData with the same values.
HOMODYNE_API NlsqSummary FitNlsq(MPI_Comm comm, const XpcsDataView& data,
                                 const NlsqOptions& options);

}  // namespace homodyne
