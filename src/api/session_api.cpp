// homodyne/session.h on the runtime layer's Environment.
#include "homodyne/session.h"

#include "runtime/environment.h"

namespace homodyne {

struct Session::Impl {
  Environment environment;
  Impl(int* argc, char*** argv, bool adopt)
      : environment(argc, argv, EnvironmentOptions{.load_topology = false, .adopt_mpi = adopt}) {}
};

Session::Session(int* argc, char*** argv) : impl_(std::make_unique<Impl>(argc, argv, false)) {}
Session::Session() : impl_(std::make_unique<Impl>(nullptr, nullptr, true)) {}
Session::~Session() = default;

MPI_Comm Session::world() const { return impl_->environment.world().get(); }
int Session::rank() const { return impl_->environment.rank(); }
int Session::size() const { return impl_->environment.size(); }

}  // namespace homodyne
