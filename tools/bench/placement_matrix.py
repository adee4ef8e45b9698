#!/usr/bin/env python3
"""The placement benchmark of issue 17 (docs/benchmarks.md §15): the paper's
experiment shape (seed 003) on one machine. Sites are network namespaces
joined by tbf-shaped links (tools/bench/sites_netns.sh): a data site, a
compute site and a client site (where the sinks write), 1-1-1 or 2-2-1
worker processes, at several link bandwidths. For each
workflow, chain and bandwidth it runs every placement of the stages that
can move, measured, beside the planner's choice (flowd plan) and the
demand-driven defaults, and checks that every run's PNG outputs equal a
one-process run's. Needs root.

Sinks stay at the client site: in the coordinator's process when it runs
there (`--coordinator client`, the default), on the client's worker node
otherwise (a placed sink, docs/cluster.md "Placement"). Sources stay at the
data site, in every placement and in the plan (flowd plan --fix): all
namespaces share this machine's disk, so a source elsewhere would read
the data without crossing the emulated links, which no real site could.
Two defaults: "default" is a run without a placement (the coordinator runs
the source at the client, which here reads the data for free: flattered),
"default, source at data" gives the source the data site's labels and
leaves every other stage demand-driven (what a run without a plan can do
once its source sits by its data).

  tools/bench/placement_matrix.py BUILD OUTDIR [--rounds R] [--default-rounds D] [--profile-runs P]
      [--bandwidths 4,16,100]
      [--chains 111,221] [--workflows nuclei,virtual-microscope] [--input SPEC]
      [--coordinator data|compute|client] [--host-cores N] [--transfer-cpu MS_PER_MB]
      [--transfer-from probe|workflow] [--calibrate-only]

The host's CPU per MB moved (the sites files' transfer_cpu_ms_per_mb) comes
from a probe of the emulated links (test items, by default) or, with
--transfer-from workflow, from each workflow's own items (two calibration
runs of it, every movable stage at the data site and at the compute site,
told apart by the machine's busy time); --calibrate-only prints the
figures and stops.

Writes OUTDIR/results.json (every run) and OUTDIR/summary.md (one row per
workflow, chain and bandwidth); prints the summary.
"""
import argparse
import hashlib
import itertools
import json
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MEASURED = re.compile(r"placement: (?:predicted|none \(demand-driven\), modelled) ([0-9.]+) s \(bottleneck ([^)]*)\), "
                      r"measured ([0-9.]+) s")


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def pngs(folder):
    """Every PNG under `folder` by relative path, as a digest."""
    out = {}
    for p in sorted(Path(folder).rglob("*.png")):
        out[str(p.relative_to(folder))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def transfer_cpu(flowd, env):
    """This machine's CPU per MB moved, one end's share (flowd calibrate --transfer)."""
    r = run([str(flowd), "calibrate", "--transfer"], env=env)
    m = re.search(r"^transfer_cpu_ms_per_mb ([0-9.eE+-]+)$", r.stdout, re.M)
    if r.returncode != 0 or not m:
        sys.exit(f"flowd calibrate --transfer failed:\n{r.stdout}{r.stderr}")
    return float(m.group(1))


def busy_seconds():
    """CPU time this machine spent outside idle so far (all processes, the kernel's network work included)."""
    f = open("/proc/stat").readline().split()
    user, nice, system, _idle, _iowait, irq, softirq = (int(x) for x in f[1:8])
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def transfer_cpu_emulated(build, out, env, rounds=3):
    """One end's CPU per MB of an item crossing the emulated links: the same
    items (40 of 4 MB, made at the data site) once kept there and once sent
    to the client's coordinator, the machine's busy time of each run told
    apart and divided by the MB the links carried, over two ends. Unlike
    flowd calibrate --transfer (loopback, one process) it sees what the
    benchmark's items cost here: the veth pairs, tbf, the forwarding through
    the compute site's namespace, and buffers of their own."""
    sites = out / "sites-transfer-probe.json"
    sites_file(sites, [1, 1, 1], 200.0, "client", 0, 0.0)
    wf = out / "transfer-probe.json"
    wf.write_text(json.dumps({"version": 1, "name": "transfer-probe", "vars": {"output": str(out / "transfer-probe")},
                              "stages": {
                                  "src": {"op": "test.count", "params": {"count": 40, "prefix": "x"}},
                                  "make": {"op": "test.step", "inputs": {"in": "src.out"},
                                           "params": {"emit_bytes": 4000000}},
                                  "out": {"op": "test.record", "inputs": {"in": "make.out"},
                                          "params": {"path": "${output}/out.txt"}}}}))
    per_mb = []
    for _ in range(rounds):
        busy = {}
        crossed = 0
        for where in ("data", "client"):
            place = out / f"transfer-probe-{where}.json"
            place.write_text(json.dumps({"stages": {"src": "data", "make": "data", "out": where}}))
            subprocess.run(["rm", "-rf", str(out / "transfer-probe")])
            b0 = busy_seconds()
            r = run([str(ROOT / "tools/bench/sites_netns.sh"), str(build), str(sites), str(wf), "--gpu", "none",
                     "--no-perf-model", "--placement", str(place), "-P", str(build / "test-plugins" / "testops")],
                    env=env, timeout=300)
            busy[where] = busy_seconds() - b0
            if r.returncode != 0:
                sys.exit(f"the transfer probe failed:\n{r.stdout}{r.stderr}")
            if where == "client":
                m = re.search(r"link data -> compute: ([0-9]+) MB", r.stdout)
                crossed = float(m.group(1)) if m else 0
        if crossed > 0:
            per_mb.append(1000 * (busy["client"] - busy["data"]) / crossed / 2)
    if not per_mb:
        sys.exit("the transfer probe moved nothing over the links")
    return max(0.0, statistics.median(per_mb))


def transfer_cpu_workflow(build, out, env, wf, wf_name, prof, roles, common, rounds=3):
    """One end's CPU per MB moved between processes, measured with the
    workflow's own items: every movable stage at the data site (the least
    traffic) and at the compute site (the most), each run `rounds` times,
    alternating, on a 1-1-1 chain at 200 MB/s; the machine's busy time of the
    two told apart and divided by the difference of what the model says each
    moves (flowd plan: "MB an item", both ends counted). The two run the same
    operators, so what differs is the moving. Unlike the probe it sees
    whatever this workflow's items cost beyond bytes (docs/benchmarks.md
    §15.8: 8.8 ms a MB where the probe read 3.2-4.5)."""
    flowd = build / "bin" / "flowd"
    sources, movable, sinks = roles
    sites = out / f"sites-calibrate-{wf_name}.json"
    sites_file(sites, [1, 1, 1], 200.0, "client", os.cpu_count(), 1.0)
    items = json.loads(prof.read_text())["source_items"]
    placements, moved = {}, {}
    for where in ("data", "compute"):
        stages = {s: "data" for s in sources}
        stages.update({s: where for s in movable})
        stages.update({s: "client" for s in sinks})
        placements[where] = out / f"calibrate-{wf_name}-{where}.json"
        placements[where].write_text(json.dumps({"stages": stages}))
        r = run([str(flowd), "plan", str(wf), "--sites", str(sites), "--profile", str(prof)]
                + [f"--fix={k}={v}" for k, v in stages.items()], env=env)
        m = re.search(r"; ([0-9.eE+-]+) MB an item,", r.stdout)
        if r.returncode != 0 or not m:
            sys.exit(f"flowd plan could not say what {wf_name} moves with every stage at {where}:\n{r.stdout}{r.stderr}")
        moved[where] = float(m.group(1)) * items
    if moved["compute"] - moved["data"] < 1:
        return None
    per_mb = []
    for _ in range(rounds):
        busy = {}
        for where in ("data", "compute"):
            target = out / "calibrate-run"
            subprocess.run(["rm", "-rf", str(target)])
            b0 = busy_seconds()
            r = run([str(ROOT / "tools/bench/sites_netns.sh"), str(build), str(sites), str(wf), "--placement",
                     str(placements[where]), "--set", f"output={target}"] + common, env=env, timeout=600)
            busy[where] = busy_seconds() - b0
            if r.returncode != 0:
                sys.exit(f"the calibration run of {wf_name} failed:\n{r.stdout}{r.stderr}")
        per_mb.append(1000 * (busy["compute"] - busy["data"]) / (moved["compute"] - moved["data"]))
    print(f"{wf_name}: moving its items costs {', '.join(f'{x:.2f}' for x in per_mb)} ms per MB at each end "
          f"({moved['data']:.0f} against {moved['compute']:.0f} MB moved)", flush=True)
    return max(0.0, statistics.median(per_mb))


def median_profile(profiles):
    """Each stage's figures as their median over several profile runs: this
    machine is shared, and one run's costs were seen 20-40 % above another's
    taken the same day (docs/benchmarks.md §15.8)."""
    doc = dict(profiles[0])
    doc["stages"] = {}
    for name, first in profiles[0]["stages"].items():
        doc["stages"][name] = {k: statistics.median(p["stages"][name][k] for p in profiles)
                               if isinstance(v, (int, float)) else v for k, v in first.items()}
    return doc


def sites_file(path, nodes, mb_s, coordinator, host_cores, cpu_ms_per_mb):
    names = ["data", "compute", "client"]
    doc = {"version": 1, "coordinator": coordinator,
           "sites": [{"name": n, "nodes": k} for n, k in zip(names, nodes)],
           "links": [{"from": names[i], "to": names[i + 1], "bandwidth_mb_s": mb_s} for i in range(2)]}
    if host_cores > 0:
        # Every namespace runs on this machine: the sites share its cores.
        doc["hosts"] = [{"name": "this-machine", "cores": host_cores, "sites": names,
                         "transfer_cpu_ms_per_mb": cpu_ms_per_mb}]
    Path(path).write_text(json.dumps(doc, indent=2) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("out")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--default-rounds", type=int, default=4,
                    help="rounds of the two demand-driven defaults, at least (they vary the most)")
    ap.add_argument("--profile-runs", type=int, default=3,
                    help="one-process runs the stage profile is the median of")
    ap.add_argument("--bandwidths", default="4,16,100")
    ap.add_argument("--chains", default="111,221")
    ap.add_argument("--workflows", default="nuclei,virtual-microscope")
    ap.add_argument("--input", default="synthetic:hne?width=2048&height=2048&count=2&seed=1")
    ap.add_argument("--coordinator", default="client", choices=["data", "compute", "client"])
    ap.add_argument("--host-cores", type=int, default=os.cpu_count(),
                    help="the cores all sites share (they run on this machine); 0: tell the planner nothing")
    ap.add_argument("--transfer-cpu", type=float, default=None,
                    help="ms of CPU per MB moved at each end, for the host (default: measured across the emulated links)")
    ap.add_argument("--transfer-from", default="probe", choices=["probe", "workflow"],
                    help="measure the host's ms per MB with the probe's items (the default) or each workflow's own")
    ap.add_argument("--calibrate-only", action="store_true",
                    help="measure the profiles and the ms per MB, print them, and stop")
    a = ap.parse_args()
    build = Path(a.build).resolve()
    flowd = build / "bin" / "flowd"
    out = Path(a.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, FLOWD_PLUGIN_PATH=str(build / "lib" / "flowd" / "plugins"))
    common = ["--gpu", "none", "--no-perf-model", "--set", "input=" + a.input]
    print(f"flowd calibrate --transfer (loopback, one process): {transfer_cpu(flowd, env):.3f} ms per MB at each end",
          flush=True)
    cpu_ms_per_mb = a.transfer_cpu if a.transfer_cpu is not None else transfer_cpu_emulated(build, out, env)
    print(f"transfer_cpu_ms_per_mb {cpu_ms_per_mb:.3f} (across the emulated links)", flush=True)
    results = []
    summary = []
    for wf_name in a.workflows.split(","):
        wf = ROOT / "workflows" / (wf_name + ".json")
        # The profile and the reference outputs: one process, one CPU.
        prof = out / f"profile-{wf_name}.json"
        ref = out / f"ref-{wf_name}"
        profiles = []
        for i in range(a.profile_runs):
            one = out / f"profile-{wf_name}-{i}.json"
            target = ref if i == 0 else out / f"profile-run-{wf_name}"
            subprocess.run(["rm", "-rf", str(target)])
            r = run([str(flowd), "run", str(wf), "--no-progress", "--cpu", "1", "--stage-profile", str(one),
                     "--set", f"output={target}"] + common, env=env)
            if r.returncode != 0:
                sys.exit(f"profile run of {wf_name} failed:\n{r.stderr}")
            profiles.append(json.loads(one.read_text()))
        prof.write_text(json.dumps(median_profile(profiles), indent=2) + "\n")
        want = pngs(ref)
        doc = json.loads(wf.read_text())
        consumed = {v.split(".")[0] for st in doc["stages"].values() for v in st.get("inputs", {}).values()}
        sources = [n for n, st in doc["stages"].items() if not st.get("inputs")]
        wf_ms_per_mb = cpu_ms_per_mb
        if a.transfer_from == "workflow" and a.transfer_cpu is None:
            sinks_of = [n for n in doc["stages"] if n not in consumed]
            roles = (sources, [n for n in doc["stages"] if n not in sources and n not in sinks_of], sinks_of)
            measured = transfer_cpu_workflow(build, out, env, wf, wf_name, prof, roles, common)
            if measured is not None:
                wf_ms_per_mb = measured
            print(f"{wf_name}: transfer_cpu_ms_per_mb {wf_ms_per_mb:.3f}", flush=True)
        if a.calibrate_only:
            continue
        # The defaults' second form: the source by its data, the rest demand-driven.
        for n in sources:
            doc["stages"][n]["labels"] = ["site:data"]
        wf_at_data = out / f"{wf_name}-source-at-data.json"
        wf_at_data.write_text(json.dumps(doc, indent=1))
        for chain in a.chains.split(","):
            nodes = [int(c) for c in chain]
            for bw in [float(x) for x in a.bandwidths.split(",")]:
                tag = f"{wf_name}-{chain}-{bw:g}"
                # A figure of the workflow's own: sites files of its own.
                sites = out / (f"sites-{chain}-{bw:g}.json" if wf_ms_per_mb == cpu_ms_per_mb
                               else f"sites-{wf_name}-{chain}-{bw:g}.json")
                sites_file(sites, nodes, bw, a.coordinator, a.host_cores, wf_ms_per_mb)
                planned = out / f"plan-{tag}.json"
                r = run([str(flowd), "plan", str(wf), "--sites", str(sites), "--profile", str(prof), "--write",
                         str(planned)] + [f"--fix={x}=data" for x in sources], env=env)
                if r.returncode != 0:
                    sys.exit(f"flowd plan failed for {tag}:\n{r.stderr}")
                plan = json.loads(planned.read_text())["stages"]
                stages = list(plan)
                sinks = [s for s in stages if s not in consumed]
                movable = [s for s in stages if s not in sinks and s not in sources]
                cases = []
                for sites_of in itertools.product(["data", "compute", "client"], repeat=len(movable)):
                    where = dict(zip(movable, sites_of))
                    where.update({s: "client" for s in sinks})
                    where.update({s: "data" for s in sources})
                    cases.append(("placement", where))
                # The plan, where it puts a sink elsewhere than the client.
                if all(where != plan for _, where in cases):
                    cases.append(("placement", dict(plan)))
                cases.append(("default", None))
                cases.append(("default, source at data", None))
                # The defaults vary from run to run far more than a placed
                # run (the demand-driven locality keeps every task by its
                # data in some runs and not in others, §15.7): at least
                # --default-rounds of them.
                for rnd in range(max(a.rounds, a.default_rounds)):
                    for kind, where in cases:
                        if rnd >= a.rounds and kind == "placement":
                            continue
                        args = []
                        label = kind
                        run_wf = wf_at_data if kind == "default, source at data" else wf
                        if where is not None:
                            f = out / f"case-{tag}.json"
                            f.write_text(json.dumps({"stages": where}))
                            args = ["--placement", str(f)]
                            label = ", ".join(f"{s}@{where[s]}" for s in stages)
                        target = out / f"run-{tag}"
                        subprocess.run(["rm", "-rf", str(target)])
                        r = run([str(ROOT / "tools/bench/sites_netns.sh"), str(build), str(sites), str(run_wf),
                                 "--profile", str(prof), "--set", f"output={target}"] + common + args,
                                env=env, timeout=900)
                        m = MEASURED.search(r.stdout + r.stderr)
                        same = pngs(target) == want if r.returncode == 0 else False
                        row = {"workflow": wf_name, "chain": chain, "mb_s": bw, "round": rnd, "placement": label,
                               "planned": where == plan, "rc": r.returncode, "same_output": same,
                               "predicted": float(m.group(1)) if m and kind != "default, source at data" else None,
                               "bottleneck": m.group(2) if m else None,
                               "measured": float(m.group(3)) if m else None}
                        results.append(row)
                        print(json.dumps(row), flush=True)
                        if r.returncode != 0 or not m:
                            (out / f"failed-{tag}-{len(results)}.log").write_text(r.stdout + r.stderr)
                (out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
                rows = [x for x in results if x["workflow"] == wf_name and x["chain"] == chain and x["mb_s"] == bw]
                by = {}
                for x in rows:
                    if x["measured"] is not None and x["rc"] == 0:
                        by.setdefault(x["placement"], []).append(x["measured"])
                med = {k: statistics.median(v) for k, v in by.items()}
                planned_label = ", ".join(f"{s}@{plan[s]}" for s in stages)
                best = min((k for k in med if not k.startswith("default")), key=lambda k: med[k])
                summary.append({"workflow": wf_name, "chain": chain, "mb_s": bw, "planned": planned_label,
                                "planned_s": med.get(planned_label), "best": best, "best_s": med[best],
                                "default_s": med.get("default"),
                                "default_data_s": med.get("default, source at data"),
                                "all_data_s": med.get(", ".join(
                                    f"{s}@{'client' if s in sinks else 'data'}" for s in stages)),
                                "all_compute_s": med.get(", ".join(
                                    f"{s}@{'client' if s in sinks else 'data' if s in sources else 'compute'}"
                                    for s in stages)),
                                "failed": sum(1 for x in rows if x["rc"] != 0 or not x["same_output"]),
                                "runs": len(rows)})
    lines = ["| workflow | chain | MB/s | planned | planned s | best measured | best s | planned / best | "
             "default s | default, source at data s | that / planned | all at data s | all at compute s | runs (bad) |",
             "|---|---|---:|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for s in summary:
        def f(v):
            return "–" if v is None else f"{v:.2f}"
        ratio = s["planned_s"] / s["best_s"] if s["planned_s"] and s["best_s"] else None
        gain = s["default_data_s"] / s["planned_s"] if s["planned_s"] and s["default_data_s"] else None
        lines.append(f"| {s['workflow']} | {'-'.join(s['chain'])} | {s['mb_s']:g} | {s['planned']} | {f(s['planned_s'])} | "
                     f"{s['best']} | {f(s['best_s'])} | {f(ratio)} | {f(s['default_s'])} | {f(s['default_data_s'])} | "
                     f"{f(gain)} | "
                     f"{f(s['all_data_s'])} | {f(s['all_compute_s'])} | {s['runs']} ({s['failed']}) |")
    (out / "summary.md").write_text("\n".join(lines) + "\n")
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
