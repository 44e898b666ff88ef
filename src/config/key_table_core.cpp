// Key table: metadata, analysis mode, analyzer parameters, experimental data, angle
// filtering, initial parameters and parameter space (spec §3, §1.8, §2.5).
#include "key_table_builder.h"

namespace homodyne::config::detail {
namespace {
using T = KeyType;
constexpr auto kAcc = KeyStatus::kAccepted;
constexpr auto kUse = KeyStatus::kUsed;

Rule PriorTypes() { return OneOf(ChoiceNames<PriorType>(), true); }

void AddMetadata(std::vector<KeySpec>& t) {
  KeyAdder m(t, "metadata");
  m.Section("", kAcc, "Descriptive information about the file; any extra key is accepted",
            kOpen | kNullable);
  m.Acc("config_version", T::kString, "", NoRule(), "Version of the config layout (informational)");
  m.Acc("description", T::kString, "", NoRule(), "Free-text description");
  m.Acc("analysis_mode", T::kString, "", NoRule(), "Mode the template was written for");
  m.Acc("parameter_count", T::kInt, "", NonNegative(), "Number of physical parameters");
  m.Acc("physics_model", T::kString, "", NoRule(), "Model description");
  m.Acc("shear_model", T::kString, "", NoRule(), "Shear model description");
  m.Acc("integration_method", T::kString, "", NoRule(), "Integration method description");
  m.Acc("diagonal_correction", T::kString, "", NoRule(), "Diagonal correction policy note");
  m.Acc("nlsq_cmc_physics_match", T::kAny, "", NoRule(), "Note that NLSQ and CMC share physics");
  m.Acc("template_type", T::kString, "", NoRule(), "Template name");
  m.Acc("complexity", T::kString, "", NoRule(), "Template complexity label");
  m.Acc("generated_at", T::kString, "", NoRule(), "Generation timestamp");
  m.Acc("generated_by", T::kString, "", NoRule(), "Generating tool");
}

void AddAnalyzer(std::vector<KeySpec>& t) {
  const FieldsOf f([](auto& c) -> auto& { return c.analyzer; });
  KeyAdder root(t, "");
  root.Used("analysis_mode", T::kString, "static_isotropic",
            OneOf({"static", "static_isotropic", "static_anisotropic", "laminar_flow",
                   "two_component", "heterodyne", "two-component"},
                  true),
            "Physics model: the static modes fit D0, alpha, D_offset; laminar_flow adds "
            "gamma_dot_t0, beta, gamma_dot_t_offset, phi0; two_component (synonyms heterodyne, "
            "two-component) is xpcsjax's two-component model: D0_ref, alpha_ref, D_offset_ref, "
            "D0_sample, alpha_sample, D_offset_sample, v0, v_beta, v_offset, f0, f1, f2, f3, "
            "phi0_het");
  KeyAdder a(t, "analyzer_parameters");
  a.Section("", kUse, "Time axis, frame window, q and gap of the analysis");
  a.Used("dt", T::kFloat, "", Positive(),
         "Frame time step in seconds; if absent experimental_data.dt, else 1.0");
  a.Used("start_frame", T::kInt, "1", AtLeast(1), "First frame (1-based)",
         f(&AnalyzerParameters::start_frame));
  a.Used("end_frame", T::kInt, "-1", CustomRule("-1 (last frame) or >= start_frame"),
         "Last frame (1-based, inclusive); -1 = last frame of the file",
         f(&AnalyzerParameters::end_frame));
  a.Acc("frame_step", T::kInt, "1", AtLeast(1),
        "xpcsjax's frame stride; not used: every frame of the window is fitted, as in "
        "xpcsjax, which reads it neither (a value > 1 gives a note)");
  a.Acc("time_unit", T::kString, "seconds", NoRule(),
        "xpcsjax's time unit label; not used: dt is always in seconds, as in xpcsjax (a value "
        "other than seconds gives a note)");
  a.Sub("scattering").Section("", kUse, "Scattering geometry");
  a.Used("scattering.wavevector_q", T::kFloat, "0.0054", Positive(),
         "Target wavevector q in 1/Angstrom; the closest q bin of the file is used",
         f(&AnalyzerParameters::wavevector_q));
  a.Sub("geometry").Section("", kUse, "Shear-cell geometry");
  a.Used("geometry.stator_rotor_gap", T::kFloat, "", Positive(),
         "Gap L in Angstrom; if absent experimental_data.geometry.stator_rotor_gap, "
         "experimental_data.sample_detector_distance, else 2000000");

  KeyAdder s(t, "analysis_settings");
  s.Section("", kAcc, "Documentation of the model (not read)", kOpen | kNullable);
  s.Section("model_description", kAcc, "Model description block", kOpen | kNullable);
  s.Acc("model_description.type", T::kString, "", NoRule(), "Model name");
  s.Acc("model_description.parameters", T::kAny, "", NoRule(), "Parameter description");
  s.Acc("model_description.physics", T::kAny, "", NoRule(), "Physics description");
}

void AddExperimentalData(std::vector<KeySpec>& t) {
  const FieldsOf f([](auto& c) -> auto& { return c.experimental_data; });
  KeyAdder e(t, "experimental_data");
  e.Section("", kUse, "Input data file and cache");
  e.Used("file_path", T::kString, "", NoRule(),
         "Full path of the data file (xpcsjax's form): locates the data when "
         "data_folder_path/data_file_name are not given (homodyne's pair wins when both are)",
         f(&ExperimentalData::file_path), kNullable);
  e.Used("data_folder_path", T::kString, "", CustomRule("required for a fit; no '..'"),
         "Folder of the HDF5 data file", f(&ExperimentalData::data_folder_path), kNullable);
  e.Used("data_file_name", T::kString, "", CustomRule("required for a fit; no '..'"),
         "Name of the HDF5 data file inside data_folder_path", f(&ExperimentalData::data_file_name),
         kNullable);
  e.Used("phi_angles_path", T::kString, "./", NoRule(),
         "Folder where phi_angles_list.txt is written", f(&ExperimentalData::phi_angles_path),
         kNullable);
  e.Acc("phi_angles_file", T::kString, "", NoRule(), "Name of the phi angle list file", kNullable);
  e.Used("cache_file_path", T::kString, "", NoRule(),
         "Folder of the NPZ cache; empty = data_folder_path", f(&ExperimentalData::cache_file_path),
         kNullable);
  e.Used("cache_filename_template", T::kString,
         "\"cached_c2_frames_${start_frame}_${end_frame}.npz\"",
         CustomRule("no path separator, no '..'"),
         "Cache file name; ${start_frame}, ${end_frame}, ${wavevector_q} are substituted",
         f(&ExperimentalData::cache_filename_template));
  e.Used("cache_compression", T::kBool, "true", NoRule(), "Compress the NPZ cache",
         f(&ExperimentalData::cache_compression));
  e.Acc("cache_directory", T::kString, "", NoRule(),
        "xpcsjax's cache folder; not used (xpcsjax reads it neither): the NPZ cache folder is "
        "cache_file_path",
        kNullable);
  e.Acc("use_caching", T::kBool, "true", NoRule(),
        "xpcsjax's cache switch; not used (xpcsjax reads it neither): "
        "v2_features.cache_strategy: none disables the NPZ cache");
  e.Acc("data_type", T::kString, "float64", NoRule(), "Data precision (always float64)");
  e.Acc("file_format", T::kString, "HDF5", NoRule(), "File format (detected from content)");
  e.Acc("exchange_key", T::kString, "exchange", NoRule(), "HDF5 group name (detected)");
  e.Section("geometry", kUse, "Fallback geometry");
  e.Used("geometry.stator_rotor_gap", T::kFloat, "", Positive(),
         "Fallback for analyzer_parameters.geometry.stator_rotor_gap (Angstrom)");
  e.Used("sample_detector_distance", T::kFloat, "", Positive(),
         "Second fallback for the gap L (Angstrom)");
  e.Used("dt", T::kFloat, "", Positive(), "Fallback for analyzer_parameters.dt (s)");
  const FieldsOf top([](auto& c) -> auto& { return c; });
  KeyAdder root(t, "");
  root.Used("q_tolerance_fraction", T::kFloat, "0.1", Positive(),
            "Relative tolerance when matching wavevector_q to the q bins of the file",
            top(&Config::q_tolerance_fraction));
}

void AddPhiFiltering(std::vector<KeySpec>& t) {
  const FieldsOf f([](auto& c) -> auto& { return c.phi_filtering; });
  KeyAdder p(t, "phi_filtering");
  p.Section("", kUse, "Selection of azimuthal angles for the fit");
  p.Used("enabled", T::kBool, "false", NoRule(), "Apply target_ranges", f(&PhiFiltering::enabled));
  p.Used("target_ranges", T::kMappingList, "[]", NoRule(),
         "Angle ranges in degrees; an angle is kept if it lies in any range", kNullable);
  p.Used("target_ranges[].min_angle", T::kFloat, "", NoRule(), "Lower end (degrees)", kRequired);
  p.Used("target_ranges[].max_angle", T::kFloat, "", NoRule(),
         "Upper end (degrees); max < min means a wrap-around range", kRequired);
  p.Acc("target_ranges[].description", T::kString, "", NoRule(), "Label of the range");
  p.Used("fallback_to_all_angles", T::kBool, "true", NoRule(),
         "Keep all angles when none match (with a warning); false: refuse the data then "
         "(exit 2)");
  p.Acc("algorithm", T::kString, "range_based", NoRule(), "Filtering algorithm name");
  p.Acc("tolerance", T::kFloat, "3.0", NonNegative(), "Angle tolerance (not read)");
  p.Section("quality_control", kAcc, "Angle coverage checks (not read)", kNullable);
  p.Acc("quality_control.min_angles_required", T::kInt, "", NonNegative(), "Minimum angles");
  p.Acc("quality_control.max_angle_spread", T::kFloat, "", NonNegative(), "Maximum spread");
  p.Acc("quality_control.validate_coverage", T::kBool, "", NoRule(), "Check coverage");
  p.Acc("quality_control.require_orthogonal_angles", T::kBool, "", NoRule(),
        "Require angles near 0 and 90 degrees");
}

void AddParameters(std::vector<KeySpec>& t) {
  const FieldsOf f([](auto& c) -> auto& { return c.initial_parameters; });
  KeyAdder i(t, "initial_parameters");
  i.Section("", kUse, "Starting point of the fit", kNullable);
  i.Used("parameter_names", T::kStringList, "", CustomRule("known parameter names (aliases ok)"),
         "Names for values; default: all parameters of the mode");
  i.Used("values", T::kFloatList, "null", CustomRule("same length as parameter_names"),
         "Initial physical values; null: NLSQ starts at homodyne's defaults (D0 1e4, alpha -1.5, "
         "gamma_dot_t0 1e-3, the others 0; the bounds' midpoint when outside them), CMC at the "
         "midpoints",
         f(&InitialParameters::values), kNullable);
  i.Section("per_angle_scaling", kUse, "Initial per-angle contrast/offset", kNullable);
  i.Used("per_angle_scaling.contrast", T::kFloatList, "null", NoRule(),
         "One contrast per kept angle; null = 0.3 for every angle", f(&InitialParameters::contrast),
         kNullable);
  i.Used("per_angle_scaling.offset", T::kFloatList, "null", NoRule(),
         "One offset per kept angle; null = 0.8 for every angle", f(&InitialParameters::offset),
         kNullable);
  i.Acc("units", T::kAny, "", NoRule(), "Units of the parameters (documentation)", kNullable);
  i.Used("active_parameters", T::kStringList, "null", CustomRule("known parameter names"),
         "Physical parameters the NLSQ fits; null = all. The others are held at their "
         "initial value (not fitted, uncertainty 0, not counted in the DOF); CMC samples the "
         "others with them held",
         kNullable);
  i.Section("fixed_parameters", kUse,
            "Physical parameters held at these values by the NLSQ (not fitted, uncertainty 0, "
            "not counted in the DOF; the value wins over values[]); CMC samples the others with "
            "them held",
            kNullable);
  i.Used("fixed_parameters.*", T::kFloat, "", NoRule(), "name: value (name must be known)");

  KeyAdder p(t, "parameter_space");
  p.Section("", kUse, "Bounds and priors of the parameters", kNullable);
  p.Acc("model", T::kString, "",
        OneOf({"static", "static_isotropic", "static_anisotropic", "laminar_flow", "two_component",
               "heterodyne", "two-component"},
              true),
        "Mode the bounds were written for");
  p.Used("bounds", T::kMappingList, "", NoRule(),
         "Per-parameter bounds; parameters not listed use the built-in defaults", kNullable);
  p.Used("bounds[].name", T::kString, "", CustomRule("known parameter, contrast or offset"),
         "Parameter name (aliases accepted; contrast/offset apply to every angle)", kRequired);
  p.Used("bounds[].min", T::kFloat, "", CustomRule("< max"), "Lower bound", kRequired);
  p.Used("bounds[].max", T::kFloat, "", CustomRule("> min"), "Upper bound", kRequired);
  p.Used("bounds[].type", T::kString, "TruncatedNormal", PriorTypes(), "CMC prior type");
  p.Used("bounds[].prior_mu", T::kFloat, "", NoRule(),
         "Prior centre; default midpoint of the bounds", kNullable);
  p.Used("bounds[].prior_sigma", T::kFloat, "", Positive(), "Prior width; default (max - min) / 4",
         kNullable);
  p.Acc("bounds[].unit", T::kString, "", NoRule(), "Unit (documentation)", kNullable);
  p.Used("bounds[].value", T::kFloat, "", NoRule(),
         "Start value (xpcsjax's overlay): wins over initial_parameters; for contrast/offset "
         "the start of every angle instead of the estimate from the data",
         kNullable);
  p.Used("bounds[].vary", T::kBool, "", NoRule(),
         "false: the parameter is held at its start (wins over active_parameters and "
         "fixed_parameters); no effect on contrast/offset (a note)",
         kNullable);
  p.Section("priors", kUse, "Explicit CMC priors by parameter name", kNullable);
  p.Section("priors.*", kUse, "Prior of one parameter (name: contrast, offset or physical)");
  p.Used("priors.*.dist_type", T::kString, "TruncatedNormal", PriorTypes(), "Distribution");
  p.Used("priors.*.mu", T::kFloat, "", NoRule(), "Location", kNullable);
  p.Used("priors.*.sigma", T::kFloat, "", Positive(), "Scale", kNullable);
  p.Used("priors.*.min_val", T::kFloat, "", NoRule(), "Lower truncation", kNullable);
  p.Used("priors.*.max_val", T::kFloat, "", NoRule(), "Upper truncation", kNullable);

  // xpcsjax's grouped format (heterodyne_parameter_space.py), two_component only.
  KeyAdder g(t, "parameters");
  g.Section("", kUse,
            "two_component only: xpcsjax's grouped parameters, group.name: {value, min, max, "
            "vary}; applied after initial_parameters and parameter_space and wins over them",
            kNullable);
  const struct {
    const char* group;
    const char* names;
  } groups[] = {{"reference", "D0_ref, alpha_ref, D_offset_ref"},
                {"sample", "D0_sample, alpha_sample, D_offset_sample"},
                {"velocity", "v0, v_beta (beta), v_offset"},
                {"fraction", "f0, f1, f2, f3"},
                {"angle", "phi0_het (phi0)"},
                {"scaling", "contrast, offset"}};
  for (const auto& grp : groups) {
    const KeyAdder gg = g.Sub(grp.group);
    gg.Section("", kUse, std::string("Parameters ") + grp.names, kNullable);
    gg.Section("*", kUse, "One parameter of the group (any other name is an error)");
    gg.Used("*.value", T::kFloat, "", NoRule(),
            "Start value; for contrast/offset the start of every angle instead of the "
            "estimate from the data",
            kNullable);
    gg.Used("*.min", T::kFloat, "", CustomRule("< max; with max"), "Lower bound", kNullable);
    gg.Used("*.max", T::kFloat, "", CustomRule("> min; with min"), "Upper bound", kNullable);
    gg.Used("*.vary", T::kBool, "", NoRule(),
            "false: held at its start; no effect on contrast/offset (a note)", kNullable);
  }

  const FieldsOf sc([](auto& c) -> auto& { return c.scaling; });
  KeyAdder s(t, "scaling");
  s.Section("", kUse,
            "xpcsjax's model scaling (xpcsjax reads it for two_component; here every mode)",
            kNullable);
  s.Acc("n_angles", T::kInt, "1", AtLeast(1),
        "Not used: sizes xpcsjax's scaling arrays; the angles are those of the data");
  s.Acc("mode", T::kString, "constant",
        OneOf({"constant", "individual", "auto", "constant_averaged"}),
        "Not used (xpcsjax's fit reads it neither): the layout is "
        "optimization.nlsq.anti_degeneracy.per_angle_mode");
  s.Used("initial_contrast", T::kFloat, "null", NoRule(),
         "Start contrast of every angle instead of the estimate from the data (wins over "
         "parameters.scaling and initial_parameters.per_angle_scaling)",
         sc(&ScalingSection::initial_contrast), kNullable);
  s.Used("initial_offset", T::kFloat, "null", NoRule(),
         "Start offset of every angle instead of the estimate from the data (same precedence)",
         sc(&ScalingSection::initial_offset), kNullable);
}

}  // namespace

void AddCoreKeys(std::vector<KeySpec>& table) {
  AddMetadata(table);
  AddAnalyzer(table);
  AddExperimentalData(table);
  AddPhiFiltering(table);
  AddParameters(table);
}

}  // namespace homodyne::config::detail
