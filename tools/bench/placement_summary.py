#!/usr/bin/env python3
"""Summarises tools/bench/placement_matrix.py's runs against a build's
planner: for each workflow, chain and bandwidth in OUTDIR/results.json,
plans again with BUILD's `flowd plan` (the sources fixed at the data site,
as the matrix runs them) and sets the plan's measured median beside the
best measured placement and the defaults; also how far the model's
prediction is from the measured median over every placement tried.
Measurements do not depend on the planner (each placement was run from a
file), so a change of the model is judged on the same runs.

  tools/bench/placement_summary.py BUILD OUTDIR...

Prints a Markdown table.
"""
import json
import statistics
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    flowd = Path(sys.argv[1]).resolve() / "bin" / "flowd"
    print("| workflow | chain | MB/s | planned (tiles at data, sinks at client) | predicted | measured | best measured | "
          "best | plan / best | default | default, source at data | that / plan | |pred − meas| / meas, all placements |")
    print("|---|---|---:|---|---:|---:|---|---:|---:|---:|---:|---:|---:|")
    for out in map(Path, sys.argv[2:]):
        rows = json.loads((out / "results.json").read_text())
        groups = defaultdict(list)
        for r in rows:
            groups[(r["workflow"], r["chain"], r["mb_s"])].append(r)
        for (wf_name, chain, bw), rs in groups.items():
            wf = ROOT / "workflows" / (wf_name + ".json")
            doc = json.loads(wf.read_text())
            sources = [n for n, st in doc["stages"].items() if not st.get("inputs")]
            plan_file = out / f"replan-{wf_name}-{chain}-{bw:g}.json"
            # The workflow's own sites file where the matrix measured its own ms per MB.
            sites = out / f"sites-{wf_name}-{chain}-{bw:g}.json"
            if not sites.exists():
                sites = out / f"sites-{chain}-{bw:g}.json"
            r = subprocess.run([str(flowd), "plan", str(wf), "--sites", str(sites),
                                "--profile", str(out / f"profile-{wf_name}.json"), "--write", str(plan_file)] +
                               [f"--fix={s}=data" for s in sources], capture_output=True, text=True)
            if r.returncode != 0:
                sys.exit(r.stderr)
            plan = json.loads(plan_file.read_text())
            label = ", ".join(f"{s}@{plan['stages'][s]}" for s in sorted(plan["stages"]))
            measured = defaultdict(list)
            for x in rs:
                if x["rc"] == 0 and x["same_output"] and x["measured"] is not None:
                    measured[x["placement"]].append(x["measured"])
            med = {k: statistics.median(v) for k, v in measured.items()}
            placements = [k for k in med if not k.startswith("default")]
            best = min(placements, key=lambda k: med[k])
            # Predictions of every placement tried, from this build's model.
            errors = []
            for k in placements:
                where = dict(part.split("@") for part in k.split(", "))
                f = out / "predict-case.json"
                f.write_text(json.dumps({"stages": where}))
                p = subprocess.run([str(flowd), "plan", str(wf), "--sites", str(sites),
                                    "--profile", str(out / f"profile-{wf_name}.json")] +
                                   [f"--fix={s}={where[s]}" for s in where], capture_output=True, text=True)
                line = next((ln for ln in p.stdout.splitlines() if ln.strip().startswith("planned ")), "")
                try:
                    predicted = float(line.split()[1])
                    errors.append(abs(predicted - med[k]) / med[k])
                except (IndexError, ValueError):
                    pass
            planned = med.get(label)
            d, dd = med.get("default"), med.get("default, source at data")

            def f(v):
                return "–" if v is None else f"{v:.2f}"
            print(f"| {wf_name} | {'-'.join(chain)} | {bw:g} | {label} | {plan['predicted_seconds']:.2f} | {f(planned)} | "
                  f"{best} | {med[best]:.2f} | {f(planned / med[best] if planned else None)} | {f(d)} | {f(dd)} | "
                  f"{f(dd / planned if planned and dd else None)} | "
                  f"{f(statistics.median(errors) if errors else None)} (median), {f(max(errors) if errors else None)} (max) |")


if __name__ == "__main__":
    main()
