#!/usr/bin/python3
"""The classical baseline flowd's nuclei segmentation is measured against.

The scikit-image recipe of shared/data/nuclei-miccai15/README.md, the one
the judge scores (Debian's python3-skimage):
1. haematoxylin = rgb2hed(rgb)[..., 0], Gaussian sigma 1, foreground =
   above its Otsu threshold;
2. binary opening with a disk of radius 1, remove objects < 60 px, fill
   holes;
3. distance = Euclidean distance transform of the foreground, then
   Gaussian sigma 1;
4. peaks = peak_local_max(distance, min_distance=7, labels=components,
   exclude_border=False);
5. markers = the connected plateaus of h_maxima(distance, 1.5) that hold a
   peak (whole plateaus, not single pixels); a component left without a
   marker gets itself as one marker;
6. watershed(-distance, markers, mask=foreground), then remove objects
   < 60 px.
(Until issue 39 this script skipped the opening, the smoothing of the
distance, the whole plateaus, the border peaks, the markers of peakless
components and the final size filter, and scored F1 0.594 / AJI 0.527
instead of 0.625 / 0.538 on the development set.)

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
    # 1.
    haematoxylin = color.rgb2hed(rgb)[..., 0]
    smooth = filters.gaussian(haematoxylin, sigma=1)
    foreground = smooth > filters.threshold_otsu(smooth)
    # 2.
    foreground = morphology.binary_opening(foreground, morphology.disk(1))
    foreground = morphology.remove_small_objects(foreground, 60)
    foreground = ndi.binary_fill_holes(foreground)
    # 3.
    distance = filters.gaussian(ndi.distance_transform_edt(foreground), sigma=1)
    # 4.
    components = measure.label(foreground)
    peaks = peak_local_max(distance, min_distance=7, labels=components, exclude_border=False)
    # 5. Whole plateaus of the h-maxima that hold a peak; a component with
    # none is one nucleus.
    plateaus = measure.label(morphology.h_maxima(distance, 1.5))
    held = np.unique(plateaus[peaks[:, 0], peaks[:, 1]]) if len(peaks) else np.array([], dtype=plateaus.dtype)
    held = held[held > 0]
    markers = np.zeros(foreground.shape, dtype=np.int32)
    keep = np.isin(plateaus, held)
    markers[keep] = np.searchsorted(held, plateaus[keep]) + 1
    n = len(held)
    for region in measure.regionprops(components):
        r0, c0, r1, c1 = region.bbox
        inside = components[r0:r1, c0:c1] == region.label
        if not markers[r0:r1, c0:c1][inside].any():
            n += 1
            markers[r0:r1, c0:c1][inside] = n
    # 6.
    labels = segmentation.watershed(-distance, markers, mask=foreground)
    labels = morphology.remove_small_objects(labels, 60)
    return labels.astype(np.int32)


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
