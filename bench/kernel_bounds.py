#!/usr/bin/env python3
"""The per-pass bounds of the homodyne kernel (bench/run_kernel_bounds.sh writes the inputs).

    kernel_bounds.py OUT.json BENCH.json STANDINS.json CEILINGS.json AVX512.s [AVX2.s]

BENCH.json / STANDINS.json: bench_kernel's and bench_kernel_standins' Google Benchmark JSON of
BM_Ceiling* and BM_Bound*. CEILINGS.json: the summary of a run_kernel_bench.sh run on a quiet
machine, whose ceilings give the roofline (the ceilings of BENCH.json, timed by the wall clock,
are recorded too, but on a loaded host they measure the load: 3 GB/s on 2026-11-30). The
roofline is taken in cycles: peak flops per cycle = 32 (two 512-bit FMA pipes: the peak loop's
AVX-512 FMA), so the quiet run's clock is its peak ÷ 32 and its bandwidth in bytes per cycle
follows; measured cycles are CPU time × the dependent-add clock of the same run. AVX512.s / AVX2.s: the point-loop copies compiled with -S
-DHOMODYNE_MCA_MARKERS, whose llvm-mca regions "loopN" are the point loops' bodies (one vector
of 8 columns; point_terms_impl.h numbers them). For each pass (static and laminar, χ² and normal
equations) the JSON holds the measured CPU time per point, the point loop's predicted cycles
per vector (llvm-mca, and a count of the loop's instructions against a Zen 5 port model), the
loop alone measured from cache, the rest of the pass, the sines' share (the stand-in binary) and
the ratios to the roofline bound and to the kernel bound (docs/performance.md, "Kernels:
bounds per pass").
"""
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
LANES = 8
# Flops per point of the cheapest formulation we know (docs/performance.md, "Counting").
FLOPS = {("laminar", "chi2"): 15.0, ("laminar", "normal"): 87.0,
         ("static", "chi2"): 6.0, ("static", "normal"): 27.0}
BYTES = 8.0
# (function, region id) of each pass's point loop: id = site·64 + laminar + 2·derivs + 4·unit
# (point_terms_impl.h, ForEachVector); site 1 the χ² loop over separable columns, 2 the
# normal loop over separable columns, 3 the loop over columns from arrays (static: all).
LOOPS = {("laminar", "chi2"): ("Chi2Block", 64 + 1 + 4),
         ("laminar", "normal"): ("NormalLaminarBlock", 128 + 1 + 2 + 4),
         ("static", "chi2"): ("Chi2Block", 192 + 4),
         ("static", "normal"): ("NormalStaticBlock", 192 + 2 + 4)}

# Zen 5 (family 1Ah), as AMD's software optimisation guide for the family describes it: a
# 512-bit data path (one op per 512-bit instruction), FP multiply/FMA on 2 pipes, FP add/max on
# 2 others, 4 FP pipes in all for arithmetic, shuffles and compares; 4 loads per cycle of which
# 2 may be 512-bit, 2 stores per cycle of which 1 may be 512-bit; 8 instructions dispatched
# per cycle. Register moves are eliminated. An assumption, not a measurement: the JSON says so.
ZEN5 = {"fma_pipes": 2, "add_pipes": 2, "fp_pipes": 4, "loads": 4, "loads_512": 2, "stores": 2,
        "stores_512": 1, "dispatch": 8}
FMA_OPS = re.compile(r"^v(fn?m(add|sub)\d*[ps][sd]|mul[ps][sd])$")
ADD_OPS = re.compile(r"^v(add|sub|max|min)[ps][sd]$")
FP_OTHER = re.compile(r"^v(cmp\w*|blendm\w*|shuf\w*|perm\w*|extract\w*|insert\w*|and\w*|xor\w*|"
                      r"or\w*|unpck\w*|broadcast\w*)$")
DIV_OPS = re.compile(r"^v(div|sqrt)[ps][sd]$")


def regions(path):
    """{(function, id): [list of instruction lines], ...} for every marked loop body."""
    out, func, cur = {}, None, None
    for line in open(path):
        m = re.match(r"^(_Z\S+):", line)
        if m:
            func = m.group(1)
        m = re.search(r"LLVM-MCA-(BEGIN|END) loop(\d+)", line)
        if m:
            if m.group(1) == "BEGIN":
                cur = []
            elif cur is not None:
                out.setdefault((func, int(m.group(2))), []).append(cur)
                cur = None
            continue
        if cur is not None and line.startswith("\t") and not line.startswith("\t."):
            if not line.lstrip().startswith("#"):
                cur.append(line.rstrip("\n"))
    return out


def is_store(ins):
    op, _, args = ins.strip().partition("\t")
    return op.startswith("vmov") and args.rstrip().endswith(")")


def pick(regs, function, rid):
    """The linear pass's copy of the loop: the instance of region rid in function with the
    fewest stores, then the fewest instructions (the robust sweeps that share the id store)."""
    cands = [r for (f, i), rs in regs.items() if i == rid and function in demangle(f) for r in rs]
    if not cands:
        return None
    return min(cands, key=lambda r: (sum(is_store(x) for x in r), len(r)))


_demangled = {}


def demangle(sym):
    if sym not in _demangled:
        _demangled[sym] = subprocess.run(["c++filt", sym], capture_output=True,
                                         text=True).stdout.strip()
    return _demangled[sym]


def zen5_count(body):
    """Instruction mix of one loop iteration and its Zen 5 port bound in cycles."""
    mix = {"instructions": 0, "fma": 0, "add": 0, "fp_other": 0, "div_sqrt": 0, "loads": 0,
           "loads_512": 0, "stores": 0, "stores_512": 0, "moves": 0}
    for ins in body:
        op, _, args = ins.strip().partition("\t")
        mix["instructions"] += 1
        mem = "(" in args
        wide = "%zmm" in args
        if is_store(ins):
            mix["stores"] += 1
            mix["stores_512"] += wide
            continue
        if op.startswith("prefetch"):
            mix["loads"] += 1
            continue
        if mem:
            mix["loads"] += 1
            mix["loads_512"] += wide
        if FMA_OPS.match(op):
            mix["fma"] += 1
        elif ADD_OPS.match(op):
            mix["add"] += 1
        elif DIV_OPS.match(op):
            mix["div_sqrt"] += 1
        elif FP_OTHER.match(op):
            mix["fp_other"] += 1
        elif op.startswith("vmov") and not mem:
            mix["moves"] += 1
    limits = {
        "fma_pipes": mix["fma"] / ZEN5["fma_pipes"],
        "add_pipes": mix["add"] / ZEN5["add_pipes"],
        "fp_pipes": (mix["fma"] + mix["add"] + mix["fp_other"]) / ZEN5["fp_pipes"],
        "loads": max(mix["loads"] / ZEN5["loads"], mix["loads_512"] / ZEN5["loads_512"]),
        "stores": max(mix["stores"] / ZEN5["stores"], mix["stores_512"] / ZEN5["stores_512"]),
        "dispatch": mix["instructions"] / ZEN5["dispatch"],
    }
    binding = max(limits, key=limits.get)
    return mix, limits, binding


def mca(body, cpu):
    """llvm-mca's steady state of the loop body: cycles per iteration and its bottleneck."""
    with tempfile.NamedTemporaryFile("w", suffix=".s", delete=False) as f:
        f.write("\n".join(body) + "\n")
        name = f.name
    iters = 1000
    res = subprocess.run(["llvm-mca", f"-mcpu={cpu}", f"-iterations={iters}",
                          "-bottleneck-analysis", name], capture_output=True, text=True)
    if res.returncode != 0:
        return {"cpu": cpu, "error": res.stderr.strip().splitlines()[-1:]}
    text = res.stdout
    total = float(re.search(r"Total Cycles:\s+(\d+)", text).group(1))
    rthr = float(re.search(r"Block RThroughput:\s+([\d.]+)", text).group(1))
    press = re.search(r"Resource Pressure\s+\[\s*([\d.]+)%", text)
    deps = re.search(r"Data Dependencies:\s+\[\s*([\d.]+)%", text)
    return {"cpu": cpu, "cycles_per_iteration": total / iters,
            "block_rthroughput": rthr,
            "cycles_with_resource_pressure_pct": float(press.group(1)) if press else 0.0,
            "cycles_with_data_dependencies_pct": float(deps.group(1)) if deps else 0.0}


def bench_index(path):
    d = json.load(open(path))
    return {b["name"]: b for b in d["benchmarks"]}, d["context"]


def main():
    out_path, bench_path, standins_path, ceilings_path, s512 = sys.argv[1:6]
    s256 = sys.argv[6] if len(sys.argv) > 6 else None
    quiet = json.load(open(ceilings_path))["ceilings"]
    flops_per_cycle = 32.0 if quiet.get("isa") == "avx512f" else 16.0
    quiet_clock = quiet["peak_flops_per_s"] / flops_per_cycle
    bytes_per_cycle = quiet["bandwidth_bytes_per_s"] / quiet_clock
    bench, context = bench_index(bench_path)
    standins, _ = bench_index(standins_path)
    r512 = regions(s512)
    r256 = regions(s256) if s256 else {}

    def first(prefix):
        return next(b for n, b in bench.items() if n.startswith(prefix))

    clock = first("BM_CeilingClock")["clock_hz"]
    bandwidth = first("BM_CeilingMemoryBandwidthTriad")["bandwidth_bytes_per_s"]
    peak = first("BM_CeilingPeakFlopsPerCore")["peak_flops_per_s"]
    result = {"benchmark": "homodyne kernel passes against their bounds, 23 angles x 1000 "
                           "frames (11.47 M points), one thread, pinned",
              "clock_hz": clock,
              "this_run_wall_clock_ceilings": {"bandwidth_bytes_per_s": bandwidth,
                                               "peak_flops_per_s": peak},
              "roofline_ceilings": {"source": os.path.relpath(ceilings_path, ROOT), **quiet,
                                    "flops_per_cycle": flops_per_cycle,
                                    "clock_hz": quiet_clock,
                                    "bytes_per_cycle": bytes_per_cycle},
              "zen5_model": ZEN5,
              "machine": {"host": context["host_name"], "date": context["date"]},
              "passes": []}
    for (mode, kind), (function, rid) in LOOPS.items():
        lam, nor = int(mode == "laminar"), int(kind == "normal")
        key = f"/laminar:{lam}/normal:{nor}/iterations:"
        p = next(b for n, b in bench.items() if n.startswith("BM_BoundPass" + key))
        sp = next(b for n, b in standins.items() if n.startswith("BM_BoundPass" + key))
        lb = next(b for n, b in bench.items() if n.startswith("BM_BoundPointBlock" + key))
        flops = FLOPS[(mode, kind)]
        roof_cyc = max(flops / flops_per_cycle, BYTES / bytes_per_cycle)
        meas = p["cycles_per_point_min"]
        entry = {
            "pass": f"{mode} {kind}", "flops_per_point": flops, "bytes_per_point": BYTES,
            "roofline_binds": "memory bandwidth" if BYTES / bytes_per_cycle
                              >= flops / flops_per_cycle else "peak flops",
            "roofline_bound_cycles_per_point": roof_cyc,
            "measured_ns_per_point_min": p["cpu_ns_per_point_min"],
            "measured_ns_per_point_median": p["cpu_ns_per_point_median"],
            "measured_cycles_per_point_min": meas,
            "measured_cycles_per_point_median": p["cycles_per_point_median"],
            "fraction_of_roofline": roof_cyc / meas,
            "standins_cycles_per_point_min": sp["cycles_per_point_min"],
            "sines_cycles_per_point": meas - sp["cycles_per_point_min"],
            "loop_alone_cycles_per_point_min": lb["cycles_per_point_min"],
            "loop_alone_cycles_per_point_median": lb["cycles_per_point_median"],
        }
        body = pick(r512, function, rid)
        if body is not None:
            mix, limits, binding = zen5_count(body)
            zen5 = limits[binding]
            entry["loop_avx512"] = {"function": function, "region": f"loop{rid}",
                                    "instruction_mix_per_vector": mix,
                                    "zen5_cycles_per_vector_by_resource": limits,
                                    "zen5_binding_resource": binding,
                                    "zen5_bound_cycles_per_point": zen5 / LANES,
                                    "llvm_mca": mca(body, "icelake-server")}
            entry["loop_avx512"]["llvm_mca"]["cycles_per_point"] = (
                entry["loop_avx512"]["llvm_mca"].get("cycles_per_iteration", float("nan"))
                / LANES)
            rest = meas - lb["cycles_per_point_min"]
            bound = zen5 / LANES + rest
            entry.update({
                "rest_of_pass_cycles_per_point": rest,
                "loop_measured_over_loop_bound": lb["cycles_per_point_min"] / (zen5 / LANES),
                "kernel_bound_cycles_per_point": bound,
                "measured_over_kernel_bound": meas / bound,
                "meets_40pct_of_roofline": roof_cyc / meas >= 0.40,
                "within_1.3x_of_kernel_bound": meas / bound <= 1.3,
            })
        if r256:
            body = pick(r256, function, rid)
            if body is not None:
                m = mca(body, "znver3")
                m["cycles_per_point"] = m.get("cycles_per_iteration", float("nan")) / LANES
                entry["loop_avx2_llvm_mca_znver3"] = m
        result["passes"].append(entry)
    json.dump(result, open(out_path, "w"), indent=2)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
