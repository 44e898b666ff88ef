// Failure injection for tests of collective error handling.
//
// When the environment variable HOMODYNE_FAIL_AT is set to a comma-separated list of
// "<stage>@<rank>" entries (e.g. "startup@1,load@0"), MaybeInjectFailure(stage, rank)
// throws an internal Error on the named rank at the named stage. Unset, it costs one
// getenv per call and does nothing. Production runs never set it.
#pragma once

#include <string_view>

namespace homodyne {

inline constexpr const char* kFailureInjectionVariable = "HOMODYNE_FAIL_AT";

// True if the variable requests a failure at `stage` on `rank`.
bool FailureRequested(std::string_view spec, std::string_view stage, int rank);

void MaybeInjectFailure(std::string_view stage, int rank);

// Same, with the process's rank in the whole job (MPI_COMM_WORLD): for stages that run
// on sub-communicators (e.g. multistart groups), whose own ranks differ from the job's.
// The only use of MPI_COMM_WORLD in the library; a test facility.
void MaybeInjectFailure(std::string_view stage);

}  // namespace homodyne
