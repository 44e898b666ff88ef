#include "core/topology.h"

#include <hwloc.h>

#include <cstdlib>
#include <utility>

#include "core/errors.h"

namespace homodyne {
namespace {

// Owning wrapper of an hwloc bitmap.
class Bitmap {
 public:
  Bitmap() : map_(hwloc_bitmap_alloc()) {
    if (map_ == nullptr) ThrowInternal("hwloc_bitmap_alloc failed");
  }
  ~Bitmap() { hwloc_bitmap_free(map_); }
  Bitmap(const Bitmap&) = delete;
  Bitmap& operator=(const Bitmap&) = delete;
  hwloc_bitmap_t get() const { return map_; }

 private:
  hwloc_bitmap_t map_;
};

}  // namespace

struct Topology::Impl {
  hwloc_topology_t topo = nullptr;
  ~Impl() {
    if (topo != nullptr) hwloc_topology_destroy(topo);
  }
};

Topology::Topology() : impl_(std::make_unique<Impl>()) {
  if (hwloc_topology_init(&impl_->topo) != 0) {
    impl_->topo = nullptr;
    ThrowInternal("hwloc_topology_init failed");
  }
  if (hwloc_topology_load(impl_->topo) != 0) ThrowInternal("hwloc_topology_load failed");
}

Topology::~Topology() = default;
Topology::Topology(Topology&&) noexcept = default;
Topology& Topology::operator=(Topology&&) noexcept = default;

TopologyCounts Topology::counts() const {
  auto count = [&](hwloc_obj_type_t type) { return hwloc_get_nbobjs_by_type(impl_->topo, type); };
  return {count(HWLOC_OBJ_PACKAGE), count(HWLOC_OBJ_NUMANODE), count(HWLOC_OBJ_CORE),
          count(HWLOC_OBJ_PU)};
}

std::string Topology::process_cpuset() const {
  Bitmap set;
  if (hwloc_get_cpubind(impl_->topo, set.get(), HWLOC_CPUBIND_PROCESS) != 0) {
    hwloc_bitmap_copy(set.get(), hwloc_topology_get_allowed_cpuset(impl_->topo));
  }
  char* text = nullptr;
  hwloc_bitmap_list_asprintf(&text, set.get());
  std::string out = text != nullptr ? text : "";
  std::free(text);
  return out;
}

int Topology::process_cores() const {
  Bitmap set;
  if (hwloc_get_cpubind(impl_->topo, set.get(), HWLOC_CPUBIND_PROCESS) != 0) {
    hwloc_bitmap_copy(set.get(), hwloc_topology_get_allowed_cpuset(impl_->topo));
  }
  return hwloc_get_nbobjs_inside_cpuset_by_type(impl_->topo, set.get(), HWLOC_OBJ_CORE);
}

void* Topology::native_handle() const { return impl_->topo; }

}  // namespace homodyne
