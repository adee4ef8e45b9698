#!/usr/bin/python3
"""Cross-validation of nuclei.segment's learned method on the real
development set, through flowd itself (what the judge runs), beside the
classical method and the scikit-image baseline on the same tiles.

    cv.py --data DIR --build BUILD --work WORK [--folds magnification|five]
          [--iters 2500] [--seed 1] [--final plugins/nuclei/model/nuclei-unet.onnx]

For each fold: train.py on the other tiles (WORK/fold-K.onnx; an existing
one is reused), then `flowd workflows/nuclei.json` on the held-out tiles
with that model and the magnification left to estimate, as a user with a
tile of unknown magnification would run it. The held-out labels of every
fold are pooled and scored once by flowd-score (F1 at IoU 0.5, AJI, Dice),
as the judge pools. The classical method and the baseline
(tools/baseline/nuclei_skimage.py) are scored on all tiles: neither learns
from them. --final then trains the shipped model on every tile and writes
the cross-validated scores into its manifest. WORK/cv.json has it all.

Folds: "magnification" trains on the 20x tiles and tests on the 40x ones and
the other way round (the harshest split: a magnification it never saw);
"five" holds out three tiles at a time (01 02 08, 03 04 09, 05 10 11,
06 12 13, 07 14 15: each fold both magnifications).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))

FOLDS = {
    "magnification": [[f"image{i:02d}" for i in range(1, 8)], [f"image{i:02d}" for i in range(8, 16)]],
    "five": [["image01", "image02", "image08"], ["image03", "image04", "image09"], ["image05", "image10", "image11"],
             ["image06", "image12", "image13"], ["image07", "image14", "image15"]],
}


def run(cmd, **kw):
    print("+", " ".join(cmd), flush=True)
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        sys.stderr.write(r.stdout[-4000:] + r.stderr[-4000:])
        raise SystemExit(f"failed ({r.returncode}): {' '.join(cmd)}")
    return r


def subset(data, names, into):
    os.makedirs(into, exist_ok=True)
    for n in names:
        shutil.copy(os.path.join(data, "images", n + ".png"), os.path.join(into, n + ".png"))
    return into


def segment(build, images, out, extra):
    flowd = os.path.join(build, "bin", "flowd")
    if os.path.exists(out):
        shutil.rmtree(out)
    run([flowd, os.path.join(ROOT, "workflows", "nuclei.json"), "--set", f"input={images}", "--set", f"output={out}",
         "--no-progress", "--no-perf-model"] + extra)
    return os.path.join(out, "labels")


def score(build, pred, truth, json_out):
    run([os.path.join(build, "bin", "flowd-score"), "--pred", pred, "--truth", truth, "--json", json_out])
    with open(json_out) as f:
        return json.load(f)["pooled"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--work", required=True)
    ap.add_argument("--folds", choices=sorted(FOLDS), default="magnification")
    ap.add_argument("--iters", type=int, default=2500)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--final", help="train the shipped model on every tile into this .onnx")
    ap.add_argument("--train-args", default="", help="more arguments for train.py")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    truth = os.path.join(a.data, "labels")
    everything = sorted(os.path.splitext(f)[0] for f in os.listdir(os.path.join(a.data, "images")))
    pooled = os.path.join(a.work, "learned-labels")
    shutil.rmtree(pooled, ignore_errors=True)
    os.makedirs(pooled)
    for k, held in enumerate(FOLDS[a.folds]):
        model = os.path.join(a.work, f"{a.folds}-{k}.onnx")
        train = [t for t in everything if t not in held]
        if not os.path.exists(model):
            run([sys.executable, os.path.join(HERE, "train.py"), "--data", a.data, "--out", model, "--tiles",
                 ",".join(train), "--iters", str(a.iters), "--seed", str(a.seed)] + a.train_args.split())
        images = subset(a.data, held, os.path.join(a.work, f"held-{k}"))
        labels = segment(a.build, images, os.path.join(a.work, f"out-{k}"), ["--set", f"segment.model={model}"])
        for n in held:
            shutil.copy(os.path.join(labels, n + ".png"), os.path.join(pooled, n + ".png"))
    result = {"folds": a.folds, "held_out": FOLDS[a.folds], "iters": a.iters, "seed": a.seed,
              "learned": score(a.build, pooled, truth, os.path.join(a.work, "learned.json"))}
    everything_dir = subset(a.data, everything, os.path.join(a.work, "all"))
    classical = segment(a.build, everything_dir, os.path.join(a.work, "out-classical"),
                        ["--set", "segment.method=classical"])
    result["classical"] = score(a.build, classical, truth, os.path.join(a.work, "classical.json"))
    base = os.path.join(a.work, "baseline")
    run(["/usr/bin/python3", os.path.join(ROOT, "tools", "baseline", "nuclei_skimage.py"), everything_dir, base])
    result["baseline"] = score(a.build, base, truth, os.path.join(a.work, "baseline.json"))
    for name in ("learned", "classical", "baseline"):
        s = result[name]
        print(f"{name:10s} F1 {s['f1']:.4f}  AJI {s['aji']:.4f}  Dice {s['dice']:.4f}")
    with open(os.path.join(a.work, "cv.json"), "w") as f:
        json.dump(result, f, indent=1)
    if a.final:
        run([sys.executable, os.path.join(HERE, "train.py"), "--data", a.data, "--out", a.final, "--iters",
             str(a.iters), "--seed", str(a.seed)] + a.train_args.split())
        manifest = os.path.splitext(a.final)[0] + ".json"
        with open(manifest) as f:
            meta = json.load(f)
        meta.setdefault("cross_validation", {})[a.folds] = result
        with open(manifest, "w") as f:
            json.dump(meta, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
