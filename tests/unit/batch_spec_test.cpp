// The batch file reader: strict keys (the unknown key is named), defaults and overrides
// merged key by key, paths resolved against the batch file's directory, q applied to the
// config, preparation failures recorded per task, the summary CSV and the row round trip.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "app/batch.h"
#include "app/batch_spec.h"
#include "config/config_reader.h"
#include "core/errors.h"
#include "temp_dir.h"

namespace homodyne::batch {
namespace {

namespace fs = std::filesystem;

std::string ErrorOf(const std::string& yaml) {
  try {
    ParseBatchYaml(yaml, "b.yaml", "/base");
  } catch (const Error& e) {
    EXPECT_EQ(ExitCodeOf(e), ExitCode::kBadInput);
    return e.what();
  }
  return "";
}

TEST(BatchSpec, UnknownAndMissingKeysAreNamed) {
  EXPECT_NE(
      ErrorOf("tasks:\n  - {name: a, config: c.yaml, dataa_file: x}\n").find("tasks[0].dataa_file"),
      std::string::npos);
  EXPECT_NE(ErrorOf("outptu_root: x\ntasks:\n  - {name: a, config: c.yaml}\n").find("outptu_root"),
            std::string::npos);
  EXPECT_NE(ErrorOf("defaults: {confg: c.yaml}\ntasks:\n  - {name: a}\n").find("defaults.confg"),
            std::string::npos);
  EXPECT_NE(ErrorOf("tasks:\n  - {name: a}\n").find("tasks[0].config"), std::string::npos);
  EXPECT_NE(ErrorOf("tasks:\n  - {config: c.yaml}\n").find("tasks[0].name"), std::string::npos);
  // homodyne's alias mcmc is not a batch method.
  const std::string mcmc = ErrorOf("tasks:\n  - {name: a, config: c, method: mcmc}\n");
  EXPECT_NE(mcmc.find("tasks[0].method"), std::string::npos);
  EXPECT_NE(mcmc.find("expected nlsq, cmc or both, found 'mcmc'"), std::string::npos);
  EXPECT_NE(ErrorOf("defaults: {method: NLSQ}\ntasks:\n  - {name: a, config: c}\n")
                .find("defaults.method"),
            std::string::npos);
  EXPECT_NE(ErrorOf("tasks:\n  - {name: a, config: c, q: -1}\n").find("tasks[0].q"),
            std::string::npos);
  EXPECT_NE(
      ErrorOf("tasks:\n  - {name: a, config: c}\n  - {name: a, config: c}\n").find("used twice"),
      std::string::npos);
  EXPECT_NE(ErrorOf("tasks:\n  - {name: a/b, config: c}\n").find("not a valid task name"),
            std::string::npos);
  EXPECT_NE(
      ErrorOf("tasks:\n  - {name: a, config: c, group_size: 0}\n").find("tasks[0].group_size"),
      std::string::npos);
  EXPECT_NE(ErrorOf("tasks: []\n").find("tasks"), std::string::npos);
  EXPECT_NE(ErrorOf("tasks: [\n").find("YAML syntax error"), std::string::npos);
}

TEST(BatchSpec, DefaultsPathsAndOverrides) {
  const BatchSpec s = ParseBatchYaml(
      "output_root: out\ngroup_size: 2\n"
      "defaults:\n  config: base.yaml\n  method: both\n"
      "  overrides: {optimization: {nlsq: {max_iterations: 7, tolerance: 1.0e-6}}}\n"
      "tasks:\n"
      "  - {name: a, data_file: d/a.h5, q: 0.005}\n"
      "  - name: b\n    config: /abs/other.yaml\n    method: nlsq\n    output_dir: elsewhere\n"
      "    group_size: 3\n"
      "    overrides: {optimization: {nlsq: {max_iterations: 9}}}\n",
      "b.yaml", "/base");
  ASSERT_EQ(s.tasks.size(), 2u);
  EXPECT_EQ(s.output_root, "/base/out");
  EXPECT_EQ(s.group_size, 2);
  EXPECT_EQ(s.tasks[0].config, "/base/base.yaml");
  EXPECT_EQ(s.tasks[0].data_file, "/base/d/a.h5");
  EXPECT_EQ(s.tasks[0].method, config::FitMethod::kBoth);
  EXPECT_EQ(s.tasks[0].output_dir, "/base/out/a");
  ASSERT_TRUE(s.tasks[0].q.has_value());
  EXPECT_DOUBLE_EQ(*s.tasks[0].q, 0.005);
  EXPECT_EQ(s.tasks[1].config, "/abs/other.yaml");
  EXPECT_EQ(s.tasks[1].method, config::FitMethod::kNlsq);
  EXPECT_EQ(s.tasks[1].output_dir, "/base/elsewhere");
  EXPECT_EQ(s.tasks[1].group_size, 3);
  EXPECT_EQ(s.tasks[0].group_size, 0);
  // Task overrides merge into the defaults' key by key.
  EXPECT_NE(s.tasks[1].overrides_yaml.find("max_iterations: 9"), std::string::npos);
  EXPECT_NE(s.tasks[1].overrides_yaml.find("tolerance"), std::string::npos);
  EXPECT_NE(s.tasks[0].overrides_yaml.find("max_iterations: 7"), std::string::npos);
}

TEST(BatchSpec, PrepareMergesTheConfigAndRecordsFailures) {
  const testing::ScopedTempDir tmp("batch_spec");
  const fs::path dir = tmp.path();
  std::ofstream(dir / "base.yaml")
      << "analysis_mode: static\nanalyzer_parameters:\n  dt: 0.1\n"
         "  scattering: {wavevector_q: 0.0054}\nexperimental_data:\n  data_folder_path: "
      << dir.string() << "\n  data_file_name: a.h5\n"
      << "initial_parameters:\n  parameter_names: [D0, alpha, D_offset]\n"
         "  values: [20000, -0.3, 0]\n";
  std::ofstream(dir / "a.h5") << std::string(1000, 'x');
  std::ofstream(dir / "broken.yaml") << "analysis_mode: [static\n";
  const BatchSpec s = ParseBatchYaml(
      "tasks:\n  - {name: a, config: base.yaml, q: 0.007, method: cmc,"
      " overrides: {initial_parameters: {values: [1000, -0.5, 1]}}}\n"
      "  - {name: b, config: broken.yaml}\n  - {name: c, config: nowhere.yaml}\n"
      "  - {name: d, config: base.yaml}\n",
      "b.yaml", dir);
  const PreparedTask a = PrepareTask(s.tasks[0]);
  ASSERT_TRUE(a.error.empty()) << a.error;
  EXPECT_EQ(a.data_bytes, 1000u);
  const config::Config cfg = config::ReadConfigString(a.config_text, "a");
  EXPECT_DOUBLE_EQ(cfg.analyzer.wavevector_q, 0.007);
  ASSERT_TRUE(cfg.initial_parameters.values.has_value());
  EXPECT_DOUBLE_EQ((*cfg.initial_parameters.values)[0], 1000.0);
  const PreparedTask b = PrepareTask(s.tasks[1]);
  EXPECT_EQ(b.exit_code, 2);
  EXPECT_NE(b.error.find("YAML syntax error"), std::string::npos);
  const PreparedTask c = PrepareTask(s.tasks[2]);
  EXPECT_EQ(c.exit_code, 2);
  EXPECT_NE(c.error.find("nowhere.yaml"), std::string::npos);
  // The fingerprint follows the definition.
  EXPECT_NE(a.fingerprint, PrepareTask(s.tasks[3]).fingerprint);
  EXPECT_EQ(a.fingerprint, PrepareTask(s.tasks[0]).fingerprint);
  // Round trip of the broadcast form.
  const auto back = PreparedTasksFromJson(PreparedTasksToJson({a, b}));
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].config_text, a.config_text);
  EXPECT_EQ(back[0].fingerprint, a.fingerprint);
  EXPECT_EQ(back[0].spec.method, config::FitMethod::kCmc);
  EXPECT_EQ(back[1].spec.method, config::FitMethod::kNlsq);
  EXPECT_EQ(back[1].error, b.error);
}

TEST(BatchSummary, RowRoundTripAndCsv) {
  TaskRow r;
  r.index = 3;
  r.name = "t";
  r.status = "failed";
  r.exit_code = 2;
  r.error = "bad, \"quoted\" value";
  r.method = config::FitMethod::kBoth;
  r.ranks = 2;
  r.group = 1;
  r.chi2 = 12.5;
  r.parameters = {{"D0", 1.5}, {"alpha", -0.25}};
  const TaskRow back = TaskRowFromJson(TaskRowJson(r));
  EXPECT_EQ(back.name, "t");
  EXPECT_EQ(back.error, r.error);
  ASSERT_EQ(back.parameters.size(), 2u);
  EXPECT_EQ(back.parameters[1].first, "alpha");  // order kept
  EXPECT_FALSE(back.reduced_chi2.has_value());
  EXPECT_EQ(back.method, config::FitMethod::kBoth);
  const std::string csv = BatchSummaryCsv({back});
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "task,status,exit_code,method,ranks,group,wall_seconds,chi2,reduced_chi2,"
            "convergence,cmc_max_rhat,q,D0,alpha,data_file,output_dir,error");
  EXPECT_NE(csv.find("\"bad, \"\"quoted\"\" value\""), std::string::npos);
  EXPECT_NE(csv.find("t,failed,2,both,2,1,"), std::string::npos);
}

TEST(BatchGroupSize, ForcedThenTaskThenFileThenDataSize) {
  PreparedTask t;
  t.data_bytes = 5000;
  EXPECT_EQ(TaskGroupSize(t, 0, 0, 1000.0, 64), 8);  // ⌈5⌉ → next power of two
  EXPECT_EQ(TaskGroupSize(t, 0, 0, 1000.0, 6), 6);   // at most the world
  EXPECT_EQ(TaskGroupSize(t, 0, 3, 1000.0, 64), 3);  // the file's group_size
  t.spec.group_size = 2;
  EXPECT_EQ(TaskGroupSize(t, 0, 3, 1000.0, 64), 2);  // the task's own
  EXPECT_EQ(TaskGroupSize(t, 4, 3, 1000.0, 64), 4);  // --group-size wins
  EXPECT_EQ(TaskGroupSize(t, 9, 3, 1000.0, 4), 4);
  t.spec.group_size = 0;
  t.data_bytes = 0;
  EXPECT_EQ(TaskGroupSize(t, 0, 0, 1000.0, 64), 1);  // unknown size: one rank
}

TEST(BatchCommand, Detection) {
  EXPECT_TRUE(IsBatchCommand({"homodyne", "batch", "f.yaml"}));
  EXPECT_TRUE(IsBatchCommand({"homodyne", "-v", "--batch", "f.yaml"}));
  EXPECT_TRUE(IsBatchCommand({"homodyne", "--batch=f.yaml"}));
  EXPECT_FALSE(IsBatchCommand({"homodyne", "--config", "batch"}));
  EXPECT_FALSE(IsBatchCommand({"homodyne"}));
}

}  // namespace
}  // namespace homodyne::batch
