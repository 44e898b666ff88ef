// Console output of an NLSQ run: the summary block and, for synthetic data, the
// truth-vs-fit table.
#pragma once

#include <optional>
#include <string>

#include "cmc/cmc_fit.h"
#include "nlsq/xpcs_fit.h"
#include "synth/synthetic_dataset.h"

namespace homodyne {

std::string FormatNlsqSummary(const nlsq::NlsqRunResult& result);

// Truth, fit, difference in reported standard uncertainties, for every physical
// parameter and the mean contrast/offset.
std::string FormatTruthComparison(const nlsq::NlsqRunResult& result,
                                  const synth::SynthTruth& truth);

// The CMC block: posterior mean ± std of every physical parameter, the mean scaling, and
// the sampling quality; and its truth comparison for synthetic data.
std::string FormatCmcSummary(const cmc::CmcRunResult& result);
std::string FormatCmcTruthComparison(const cmc::CmcRunResult& result,
                                     const synth::SynthTruth& truth);

}  // namespace homodyne
