#!/usr/bin/python3
"""Trains nuclei.segment's nuclear map network (unet.py) on real annotated
tiles and exports it for the engine: MODEL.onnx (BatchNorm folded) and
MODEL.json, its manifest (what the engine needs to use it, and how it was
made: data, commit, seed, iterations, and the network's own outputs on a
fixed input, which the engine's tests compare with its inference).

    train.py --data DIR --out MODEL.onnx [--tiles image01,image02,...]
             [--iters 2500] [--seed 1] [--smoke]

Debian's python3-torch (CPU) and python3-skimage. --smoke trains a few
iterations on small crops (CI runs it: the script works, not the model).
Fixed seeds; on one machine and torch build the result is repeatable.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import data  # noqa: E402
import unet  # noqa: E402

FORMAT = "flowd.nuclei.unet/1"
# The input the manifest's check is computed on: a pattern any
# implementation can make from the formula (no file to ship).
CHECK_SIDE = 48


def check_input():
    y, x = np.mgrid[0:CHECK_SIDE, 0:CHECK_SIDE]
    r = (x * 7 + y * 13) % 256
    g = (x * x + 3 * y) % 256
    b = ((x // 4) * 37 + (y // 4) * 11) % 256
    return np.stack([r, g, b], axis=-1).astype(np.float32)  # RGB 0..255


def check_points():
    return [[int(y), int(x)] for y in range(1, CHECK_SIDE, 7) for x in range(2, CHECK_SIDE, 9)]


def git_commit():
    try:
        here = os.path.dirname(os.path.abspath(__file__))
        return subprocess.run(["git", "-C", here, "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def export(model, out, meta):
    m = unet.fused(model)
    dummy = torch.zeros(1, 3, 64, 64)
    torch.onnx.export(m, dummy, out, opset_version=11, input_names=["rgb"], output_names=["logits"],
                      dynamic_axes={"rgb": {2: "h", 3: "w"}, "logits": {2: "h", 3: "w"}})
    with torch.no_grad():
        x = torch.from_numpy(check_input() / 255.0).permute(2, 0, 1).unsqueeze(0)
        p = torch.softmax(m(x), dim=1)[0].numpy()
    meta["check"] = {
        "input": "rgb(x, y) = ((7x + 13y) mod 256, (x^2 + 3y) mod 256, (37 floor(x/4) + 11 floor(y/4)) mod 256), "
                 f"{CHECK_SIDE} x {CHECK_SIDE}",
        "side": CHECK_SIDE,
        "points": check_points(),
        "probabilities": [[float(p[c, y, x]) for c in range(3)] for y, x in check_points()],
    }
    manifest = os.path.splitext(out)[0] + ".json"
    with open(manifest + ".tmp", "w") as f:
        json.dump(meta, f, indent=1)
    os.replace(manifest + ".tmp", manifest)
    return manifest


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True, help="folder with images/ and labels/")
    ap.add_argument("--out", required=True, help="MODEL.onnx (MODEL.json is written beside it)")
    ap.add_argument("--tiles", help="comma-separated tile names to train on (default: all)")
    ap.add_argument("--iters", type=int, default=2500)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--crop", type=int, default=192)
    ap.add_argument("--base", type=int, default=8, help="channels of the first level")
    ap.add_argument("--canonical-mpp", type=float, default=0.35, help="the resolution the network works at, µm/px")
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--smoke", action="store_true", help="a few iterations on small crops")
    a = ap.parse_args()
    if a.smoke:
        a.iters, a.batch, a.crop = 3, 2, 64
    if a.crop % 8:
        raise SystemExit("--crop must be a multiple of 8 (three 2x2 poolings)")
    torch.manual_seed(a.seed)
    torch.set_num_threads(a.threads)
    rng = np.random.default_rng(a.seed)
    names = a.tiles.split(",") if a.tiles else None
    tiles = data.load_tiles(a.data, names)
    if not tiles:
        raise SystemExit(f"no tiles in {a.data}")
    model = unet.UNet(base=a.base)
    opt = torch.optim.Adam(model.parameters(), lr=a.lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=a.iters, eta_min=a.lr / 20)
    # Boundaries are few but decide the splits.
    weights = torch.tensor([1.0, 1.0, 3.0])
    start = time.time()
    losses = []
    for it in range(a.iters):
        xs, ys = zip(*(data.sample(tiles, a.crop, a.canonical_mpp, rng) for _ in range(a.batch)))
        x = torch.from_numpy(np.stack(xs)).permute(0, 3, 1, 2)
        y = torch.from_numpy(np.stack(ys))
        model.train()
        loss = F.cross_entropy(model(x), y, weight=weights)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        losses.append(float(loss))
        if (it + 1) % 100 == 0 or it + 1 == a.iters:
            print(f"iteration {it + 1}/{a.iters}: loss {np.mean(losses[-100:]):.4f} ({time.time() - start:.0f} s)",
                  flush=True)
    meta = {
        "format": FORMAT,
        "classes": list(unet.CLASSES),
        "input": "RGB, each channel / 255, float32, N x 3 x H x W; H and W multiples of 8",
        "canonical_mpp": a.canonical_mpp,
        "base_channels": a.base,
        "levels": 3,
        "training": {
            "data": os.path.abspath(a.data),
            "tiles": [t.name for t in tiles],
            "iterations": a.iters, "batch": a.batch, "crop": a.crop, "lr": a.lr, "seed": a.seed,
            "scales": list(data.SCALES),
            "smoke": a.smoke,
            "commit": git_commit(),
            "torch": torch.__version__,
            "seconds": round(time.time() - start, 1),
            "final_loss": float(np.mean(losses[-100:])),
        },
    }
    manifest = export(model, a.out, meta)
    print(f"wrote {a.out} and {manifest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
