"""The nuclear map network of nuclei.segment's learned method (issue 39).

A small U-Net: three levels of two 3x3 convolutions (batch-normalised while
training, folded into the convolutions for export) with ReLU, 2x2 max
pooling down, nearest-neighbour upsampling up, skip connections by
concatenation, and a 1x1 convolution to three classes per pixel:
0 background, 1 nucleus interior, 2 nucleus boundary (the pixels of a
nucleus next to the background or to another nucleus: what separates
touching nuclei). Every operation is one the engine's CPU (OpenCV DNN) and
GPU (plugins/nuclei/unet) inference implement exactly.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

CLASSES = ("background", "interior", "boundary")


def block(cin, cout):
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
        nn.Conv2d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class UNet(nn.Module):
    def __init__(self, base=8, levels=3):
        super().__init__()
        ch = [base * 2 ** i for i in range(levels + 1)]
        self.levels = levels
        self.down = nn.ModuleList([block(3 if i == 0 else ch[i - 1], ch[i]) for i in range(levels)])
        self.middle = block(ch[levels - 1], ch[levels])
        self.up = nn.ModuleList([block(ch[i + 1] + ch[i], ch[i]) for i in reversed(range(levels))])
        self.head = nn.Conv2d(ch[0], len(CLASSES), 1)

    def forward(self, x):
        skips = []
        for d in self.down:
            x = d(x)
            skips.append(x)
            x = F.max_pool2d(x, 2)
        x = self.middle(x)
        for u in self.up:
            x = F.interpolate(x, scale_factor=2, mode="nearest")
            x = u(torch.cat([x, skips.pop()], 1))
        return self.head(x)


def fused(model):
    """The model in eval mode with each BatchNorm folded into its convolution."""
    import copy
    m = copy.deepcopy(model).eval()

    def fold(seq):
        layers = list(seq)
        out = []
        i = 0
        while i < len(layers):
            if isinstance(layers[i], nn.Conv2d) and i + 1 < len(layers) and isinstance(layers[i + 1], nn.BatchNorm2d):
                out.append(torch.nn.utils.fusion.fuse_conv_bn_eval(layers[i], layers[i + 1]))
                i += 2
            else:
                out.append(layers[i])
                i += 1
        return nn.Sequential(*out)

    m.down = nn.ModuleList([fold(d) for d in m.down])
    m.middle = fold(m.middle)
    m.up = nn.ModuleList([fold(u) for u in m.up])
    return m
