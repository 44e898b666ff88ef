// The public C++ API of homodyne-hpc: include this one header.
//
//   homodyne::Session session(&argc, &argv);              // MPI, PETSc, HDF5
//   homodyne::XpcsData data = homodyne::LoadXpcsData({.file = "run.h5", .dt = 0.1});
//   homodyne::NlsqSummary fit = homodyne::FitNlsq(session.world(), data, {});
//   if (session.rank() == 0) std::cout << fit.FullReport();
//   homodyne::CmcSummary posterior =
//       homodyne::FitCmc(session.world(), data, {.warm_start = fit});  // sampling
//
// Link homodyne::homodyne (find_package(homodyne)). examples/cpp/ has complete programs.
#pragma once

#include "homodyne/cmc.h"
#include "homodyne/config_fit.h"
#include "homodyne/data.h"
#include "homodyne/error.h"
#include "homodyne/export.h"
#include "homodyne/model.h"
#include "homodyne/nlsq.h"
#include "homodyne/session.h"
#include "homodyne/version.h"
