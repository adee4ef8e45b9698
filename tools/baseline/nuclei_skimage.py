#!/usr/bin/python3
"""The classical baseline flowd's nuclei segmentation is measured against.

A plain scikit-image pipeline, as issue 13 defines it (Debian's
python3-skimage): rgb2hed -> haematoxylin channel -> Gaussian sigma 1 ->
Otsu threshold -> remove_small_objects(60) and binary_fill_holes ->
Euclidean distance transform -> markers: peak_local_max(min_distance=7)
kept where the h-maxima (h = 1.5) of the distance are -> watershed of the
negated distance within the mask.

    nuclei_skimage.py IMAGES_DIR OUT_DIR [--timing timing.json]

Writes OUT_DIR/<stem>.png, a 16-bit instance label image per RGB image of
IMAGES_DIR (.png/.tif/.tiff/.jpg), ready for `flowd-score --pred OUT_DIR`.
--timing writes the segmentation time of each image (reading and writing
excluded) so the speed can be compared with flowd's on the same tiles.
Exit 2 naming the file for an image that cannot be read or is not RGB.
"""
import argparse
import json
import os
import sys
import time

import numpy as np
from scipy import ndimage as ndi
from skimage import color, filters, io, measure, morphology, segmentation
from skimage.feature import peak_local_max

EXTENSIONS = (".png", ".tif", ".tiff", ".jpg", ".jpeg")


def segment(rgb):
    """Instance labels (int32, 0 = background) of one RGB uint8 image."""
    haematoxylin = color.rgb2hed(rgb)[..., 0]
    smooth = filters.gaussian(haematoxylin, sigma=1)
    mask = smooth > filters.threshold_otsu(smooth)
    mask = morphology.remove_small_objects(mask, 60)
    mask = ndi.binary_fill_holes(mask)
    distance = ndi.distance_transform_edt(mask)
    # The h-maxima suppress the shallow maxima of irregular outlines; the
    # minimum peak distance the maxima of one elongated nucleus.
    hmax = morphology.h_maxima(distance, 1.5)
    peaks = peak_local_max(distance, min_distance=7, labels=measure.label(mask))
    markers = np.zeros(mask.shape, dtype=np.int32)
    n = 0
    for r, c in peaks:
        if hmax[r, c]:
            n += 1
            markers[r, c] = n
    return segmentation.watershed(-distance, markers, mask=mask).astype(np.int32)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("images")
    ap.add_argument("out")
    ap.add_argument("--timing", help="JSON file for per-image segmentation seconds")
    a = ap.parse_args()
    if not os.path.isdir(a.images):
        print(f"nuclei_skimage: '{a.images}' is not a folder", file=sys.stderr)
        return 2
    names = sorted(f for f in os.listdir(a.images) if f.lower().endswith(EXTENSIONS))
    if not names:
        print(f"nuclei_skimage: no images ({', '.join(EXTENSIONS)}) in '{a.images}'", file=sys.stderr)
        return 2
    os.makedirs(a.out, exist_ok=True)
    timing = {}
    for name in names:
        path = os.path.join(a.images, name)
        try:
            rgb = io.imread(path)
        except Exception as e:  # noqa: BLE001 - any reader error names the file
            print(f"nuclei_skimage: cannot read '{path}': {e}", file=sys.stderr)
            return 2
        if rgb.ndim != 3 or rgb.shape[2] < 3:
            print(f"nuclei_skimage: '{path}' is not an RGB image (shape {rgb.shape})", file=sys.stderr)
            return 2
        start = time.perf_counter()
        labels = segment(rgb[..., :3])
        timing[name] = time.perf_counter() - start
        if labels.max() > 65535:
            print(f"nuclei_skimage: '{path}': more than 65535 objects", file=sys.stderr)
            return 2
        stem = os.path.splitext(name)[0]
        tmp = os.path.join(a.out, f".{stem}.tmp.png")
        io.imsave(tmp, labels.astype(np.uint16), check_contrast=False)
        os.replace(tmp, os.path.join(a.out, stem + ".png"))
    if a.timing:
        seconds = sorted(timing.values())
        with open(a.timing, "w") as f:
            json.dump({"images": timing, "median_s": seconds[len(seconds) // 2]}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
