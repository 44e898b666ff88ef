// One batch task on its rank group (internal to the batch runner): the fit, its outputs,
// the completion marker and the summary row. Errors of the task are agreed within the
// group and turned into a failed row; only unagreed errors in groups of several ranks
// propagate (the job must then be aborted).
#pragma once

#include <string>
#include <vector>

#include "app/batch.h"
#include "core/log.h"
#include "core/placement.h"
#include "parallel/comm.h"
#include "parallel/placement_report.h"

namespace homodyne::batch {

struct GroupContext {
  const Environment& env;
  const Comm& group;
  int group_index = 0;
  PlacementPlan placement;                // this rank
  std::vector<RankPlacement> placements;  // the group's ranks
  bool pin = false;
  LogLevel fit_level = LogLevel::kWarning;
  Logger log;  // batch-level lines (printed by the group roots)
  std::string command_line;
};

// The summary row of a task before it runs (name, method, paths).
TaskRow RowFor(const PreparedTask& task);

// Collective over g.group. The returned row is complete on the group root.
TaskRow RunTask(GroupContext& g, const PreparedTask& task);

}  // namespace homodyne::batch
