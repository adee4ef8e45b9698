"""Training samples for the nuclear map network, from real annotated tiles.

Tiles come from a folder of images/NAME.png (RGB) and labels/NAME.png
(16-bit instances), as shared/data/nuclei-miccai15 holds them. Every sample
is a crop resampled to the network's canonical resolution times a random
scale (so the network sees nuclei of a range of sizes: the engine resamples
a tile to the canonical resolution from its estimated magnification, and
the estimate may be off), turned and flipped, with the stain, focus and
JPEG compression of other slides simulated.
"""
import io as _io
import os

import numpy as np
from PIL import Image
from skimage import color, io, transform

# The development set's magnifications (its README): images 01-07 were
# scanned at 20x, 08-15 at 40x. Microns per pixel of TCGA scans.
MPP_20X, MPP_40X = 0.5, 0.25
# The range of nucleus sizes a sample shows, relative to the canonical
# resolution's: wide enough that a 20x (0.5 µm/px) or 40x (0.25) tile run
# as it is, without resampling, lies inside (0.7 and 1.4 of 0.35 µm/px).
SCALES = (0.6, 1.7)


def mpp_of(name):
    number = int("".join(c for c in name if c.isdigit()) or 0)
    return MPP_20X if number <= 7 else MPP_40X


class Tile:
    def __init__(self, name, rgb, labels, mpp):
        self.name, self.rgb, self.labels, self.mpp = name, rgb, labels, mpp


def load_tiles(folder, names=None):
    """The tiles of folder/images and folder/labels, optionally only `names`."""
    stems = sorted(os.path.splitext(f)[0] for f in os.listdir(os.path.join(folder, "images")) if f.endswith(".png"))
    if names is not None:
        missing = sorted(set(names) - set(stems))
        if missing:
            raise SystemExit(f"no tiles {', '.join(missing)} in {folder}/images")
        stems = [s for s in stems if s in names]
    tiles = []
    for s in stems:
        rgb = io.imread(os.path.join(folder, "images", s + ".png"))[..., :3]
        labels = io.imread(os.path.join(folder, "labels", s + ".png")).astype(np.int32)
        if rgb.shape[:2] != labels.shape:
            raise SystemExit(f"{s}: image {rgb.shape[:2]} and labels {labels.shape} differ in size")
        tiles.append(Tile(s, rgb, labels, mpp_of(s)))
    return tiles


def classes_of(labels):
    """0 background, 1 interior, 2 boundary: a nucleus pixel with an
    8-neighbour of another value (background or another nucleus)."""
    padded = np.pad(labels, 1, mode="edge")
    h, w = labels.shape
    edge = np.zeros(labels.shape, dtype=bool)
    for dy in (-1, 0, 1):
        for dx in (-1, 0, 1):
            if dy or dx:
                edge |= padded[1 + dy:1 + dy + h, 1 + dx:1 + dx + w] != labels
    out = np.zeros(labels.shape, dtype=np.int64)
    out[labels > 0] = 1
    out[(labels > 0) & edge] = 2
    return out


def jitter_stain(rgb, rng):
    """Haematoxylin and eosin of another slide: each stain's optical density
    scaled and shifted (Tellez et al.'s HED augmentation)."""
    hed = color.rgb2hed(rgb)
    for c in range(3):
        hed[..., c] = hed[..., c] * rng.uniform(0.7, 1.3) + rng.uniform(-0.03, 0.03)
    return np.clip(color.hed2rgb(hed), 0, 1)


def jpeg(rgb, quality):
    buf = _io.BytesIO()
    Image.fromarray((rgb * 255).round().astype(np.uint8)).save(buf, "JPEG", quality=int(quality))
    return np.asarray(Image.open(_io.BytesIO(buf.getvalue())), dtype=np.float32) / 255


def sample(tiles, size, canonical_mpp, rng, augment=True):
    """One (rgb float32 HxWx3 in 0..1, classes int64 HxW) training pair."""
    areas = np.array([t.labels.size for t in tiles], dtype=float)
    t = tiles[rng.choice(len(tiles), p=areas / areas.sum())]
    scale = float(np.exp(rng.uniform(np.log(SCALES[0]), np.log(SCALES[1])))) if augment else 1.0
    factor = t.mpp / (canonical_mpp * scale)  # native pixels -> sample pixels
    side = int(np.ceil(size / factor))
    h, w = t.labels.shape
    pad_y, pad_x = max(0, side - h), max(0, side - w)
    rgb, lab = t.rgb, t.labels
    if pad_y or pad_x:
        rgb = np.pad(rgb, ((0, pad_y), (0, pad_x), (0, 0)), mode="reflect")
        lab = np.pad(lab, ((0, pad_y), (0, pad_x)), mode="reflect")
    y = rng.integers(0, lab.shape[0] - side + 1)
    x = rng.integers(0, lab.shape[1] - side + 1)
    crop = rgb[y:y + side, x:x + side].astype(np.float32) / 255
    crop_lab = lab[y:y + side, x:x + side]
    crop = transform.resize(crop, (size, size), order=1, anti_aliasing=factor < 1, preserve_range=True)
    crop_lab = transform.resize(crop_lab, (size, size), order=0, anti_aliasing=False, preserve_range=True).astype(np.int32)
    classes = classes_of(crop_lab)
    if augment:
        k = rng.integers(4)
        crop, classes = np.rot90(crop, k), np.rot90(classes, k)
        if rng.random() < 0.5:
            crop, classes = crop[:, ::-1], classes[:, ::-1]
        crop = jitter_stain(crop, rng)
        crop = np.clip((crop - 0.5) * rng.uniform(0.85, 1.15) + 0.5 + rng.uniform(-0.05, 0.05), 0, 1)
        if rng.random() < 0.3:
            from scipy.ndimage import gaussian_filter
            s = rng.uniform(0.3, 1.2)
            crop = gaussian_filter(crop, sigma=(s, s, 0))
        if rng.random() < 0.3:
            crop = jpeg(crop, rng.uniform(50, 95))
    return np.ascontiguousarray(crop, dtype=np.float32), np.ascontiguousarray(classes)
