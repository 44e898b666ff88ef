// What the public API's fits share: the in-memory data checked and turned into the
// library's io::DatasetView, and the public parameter settings written into the typed config
// (the fields the YAML reader fills from initial_parameters and parameter_space.bounds).
#pragma once

#include <string>
#include <vector>

#include "cmc/cmc_fit.h"
#include "config/config.h"
#include "homodyne/cmc.h"
#include "homodyne/data.h"
#include "homodyne/nlsq.h"
#include "io/dataset.h"
#include "nlsq/nlsq_checkpoint.h"
#include "nlsq/xpcs_fit.h"
#include "parallel/comm.h"

namespace homodyne::api {

// Throws homodyne::Error (kBadInput) naming the first inconsistent field of `data`: the
// owned matrices' sizes, then what CheckData of its view checks.
void CheckData(const XpcsData& data);
// The same for matrices held elsewhere, whose sizes the view cannot know: a null matrix,
// fewer than 3 frames, the angle count, q and dt.
void CheckData(const XpcsDataView& data);

// The data as the loader would present the same matrices (frames 1…N, loader time grid),
// viewing data.c2 (no copy): the matrices must outlive the view.
io::DatasetView ToDatasetView(const XpcsDataView& data);

// The public enum of a resolved layout or a quality flag as the library's reports spell
// them (model::ToString(ScalingLayout), nlsq::ToString(FitQuality)); an unknown spelling is
// a bug (kInternal), an empty quality kNotAssessed.
ScalingLayout ParseScalingLayout(const std::string& text);

// The config's per_angle_mode of the public setting.
model::PerAngleMode ToPerAngleMode(PerAngleScaling scaling);
// The model's layout of the same meaning (whose ToString spells the result files' names).
model::ScalingLayout ToModelLayout(ScalingLayout layout);
FitQuality ParseFitQuality(const std::string& text);

// From every shard's max R-hat and min ESS: kNotConverged when an R-hat is at or above
// rhat_threshold or an ESS below ess_threshold (the run's: CmcRunResult), else kUnchecked
// when an R-hat is NaN (one chain, or draws without variance) or there are no shards, else
// kConverged. CmcRunResult::all_converged counts a NaN as converged; the status does not.
CmcStatus CmcStatusOf(const std::vector<cmc::ShardDiagnostics>& shards, double rhat_threshold = 1.1,
                      double ess_threshold = 0.0);

// Throws homodyne::Error (kBadInput) naming `source`'s field parameters[<name>] when a
// setting is not a parameter of `mode` or its values are not finite or ordered.
void ValidateParameterSettings(AnalysisMode mode, const std::vector<ParameterSetting>& settings,
                               const std::string& source);

// The analysis mode, data geometry and parameter settings in `cfg` (before
// config::ResolveParameters): what a YAML config of the same fit would set.
void ApplyModelSettings(config::Config& cfg, AnalysisMode mode, double stator_rotor_gap,
                        const std::vector<ParameterSetting>& settings, const XpcsDataView& data,
                        const std::string& source);

// The public summary of a fit's result (rank 0's, or every rank's when they hold the same).
NlsqSummary ToNlsqSummary(const nlsq::NlsqRunResult& r);

// The public summary of a sampling's result; `phi_deg` are the data's angles (one
// contrast/offset each in the result's expanded parameters).
CmcSummary ToCmcSummary(const cmc::CmcRunResult& r, const std::vector<double>& phi_deg, int ranks,
                        int threads);

// The settings that make a run stop at a RequestStop(): no periodic checkpoints, the state
// at the stop written to `dir` (empty: homodyne-stop-<pid of rank 0> in the temporary
// directory; the same path on every rank). Collective over `comm`.
checkpoint::CheckpointSettings StopSettings(const Comm& comm, const config::Config& cfg,
                                            const std::string& dir);

}  // namespace homodyne::api
