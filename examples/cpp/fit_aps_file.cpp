// An NLSQ fit of an APS file: the c2 matrices of one q-ring read with LoadXpcsData, then
// fitted in static mode on every rank of MPI_COMM_WORLD. The file and the frame interval
// are the arguments; without them it fits the real measured matrix of examples/data (the
// fit `homodyne --config examples/real_static.yaml` runs):
//
//   mpiexec -n 2 ./fit_aps_file examples/data/bnl_twotime_350.h5 1.0
//
// Exit 0 when the fit converged, 4 when it stopped without meeting its optimality test
// (as the homodyne command), 2 for bad input and 1 for other errors.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "homodyne/homodyne.h"

int main(int argc, char** argv) {
  homodyne::Session session(&argc, &argv);  // MPI and HDF5 (PETSc when asked for)
  try {
    homodyne::DataSelection selection;
    selection.file = argc > 1 ? argv[1] : "examples/data/bnl_twotime_350.h5";
    selection.dt = argc > 2 ? std::strtod(argv[2], nullptr) : 1.0;  // [s]
    selection.q = 0.0054;  // the ring nearest to this q [1/Å]
    // Every rank reads the file; LoadXpcsData is serial and needs no communicator.
    const homodyne::XpcsData data = homodyne::LoadXpcsData(selection);
    if (session.rank() == 0) {
      std::printf("%s: q = %g 1/A, %zu angle(s), %d frames of %g s\n", data.source.c_str(), data.q,
                  data.phi_deg.size(), data.n_frames(), data.dt);
    }

    homodyne::NlsqOptions options;
    options.mode = homodyne::AnalysisMode::kStatic;
    options.parameters = {{.name = "D0", .initial = 1000.0},
                          {.name = "alpha", .initial = 0.0},
                          {.name = "D_offset", .initial = 0.0}};
    options.per_angle = homodyne::PerAngleScaling::kIndividual;
    options.max_iterations = 200;
    const homodyne::NlsqSummary fit = homodyne::FitNlsq(session.world(), data, options);
    if (session.rank() == 0) {
      std::printf("%s", fit.FullReport().c_str());
      std::printf("status %s, quality %s, per-angle scaling %s\n",
                  std::string(homodyne::ToString(fit.status)).c_str(),
                  std::string(homodyne::ToString(fit.quality)).c_str(),
                  std::string(homodyne::ToString(fit.per_angle_scaling)).c_str());
    }
    return fit.status == homodyne::NlsqStatus::kConverged ? 0 : 4;
  } catch (const homodyne::Error& e) {
    std::fprintf(stderr, "fit_aps_file: %s\n", e.what());
    const bool bad_input =
        e.kind() == homodyne::ErrorKind::kBadInput || e.kind() == homodyne::ErrorKind::kIo;
    return bad_input ? 2 : 1;
  }
}
