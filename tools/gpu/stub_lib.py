#!/usr/bin/env python3
"""Writes a stand-in for a shared library that flowd's dependencies link but
never call in a device check (GDAL and GDCM behind OpenCV's imgcodecs;
curl and OpenSSL behind HDF5's S3 driver). The stand-in has the real library's
SONAME, its version nodes and every symbol the consumers import from it;
functions do nothing and return 0 (null, false, "no error"), data is
zero-filled with the real size. OpenCV calls GDALAllRegister while it
registers its codecs, so a stand-in must not trap; anything else that reaches
one gets a failure value (GDALOpen: null) and reports it.
It keeps the bundle that travels to the lent GPU machine small (tools/gpu/pack.sh).

    stub_lib.py REAL_LIB OUT_DIR CONSUMER...
"""
import os
import re
import subprocess
import sys


def run(*cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def soname(path):
    m = re.search(r"\(SONAME\)\s+Library soname: \[(.+)\]", run("readelf", "-d", path))
    if not m:
        sys.exit(f"stub_lib: {path} has no SONAME")
    return m.group(1)


def defined(path):
    """name -> (kind, size, version) for every dynamic symbol the library defines."""
    out = {}
    for line in run("readelf", "--dyn-syms", "-W", path).splitlines():
        f = line.split()
        if len(f) < 8 or not f[0].endswith(":") or f[6] in ("UND", "Ndx"):
            continue
        kind, size, name = f[3], int(f[2], 0), f[7]
        if kind not in ("FUNC", "OBJECT", "IFUNC", "TLS"):
            continue
        base, _, ver = name.partition("@")
        out[base] = (kind, size, ver.lstrip("@"))
    return out


def imported(path):
    names = set()
    for line in run("readelf", "--dyn-syms", "-W", path).splitlines():
        f = line.split()
        if len(f) >= 8 and f[6] == "UND":
            names.add(f[7].split("@")[0])
    return names


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    real, out_dir, consumers = sys.argv[1], sys.argv[2], sys.argv[3:]
    name = soname(real)
    have = defined(real)
    want = set()
    for c in consumers:
        want |= imported(c)
    syms = sorted(want & have.keys())
    asm, versions = [], {}
    for i, s in enumerate(syms):
        kind, size, ver = have[s]
        versions.setdefault(ver, []).append(s)
        if kind in ("FUNC", "IFUNC"):
            asm += [".text", f'.globl "{s}"', f'.type "{s}",@function', f'"{s}":', "xorl %eax, %eax", "ret",
                    f'.size "{s}",3']
        else:
            asm += [".data", ".balign 16", f'.globl "{s}"', f'.type "{s}",@object', f'"{s}":',
                    f".zero {max(size, 1)}", f'.size "{s}",{max(size, 1)}']
    os.makedirs(out_dir, exist_ok=True)
    base = os.path.join(out_dir, name)
    with open(base + ".s", "w") as f:
        f.write("\n".join(asm) + "\n")
    vs = [f"{v} {{ global: {' '.join(chr(34) + s + chr(34) + ';' for s in ss)} }};" for v, ss in versions.items() if v]
    unversioned = versions.get("", [])
    if unversioned or not vs:
        vs.append("{ global: " + " ".join(f'"{s}";' for s in unversioned) + " local: *; };")
    with open(base + ".map", "w") as f:
        f.write("\n".join(vs) + "\n")
    subprocess.run(["gcc", "-shared", "-nostdlib", "-o", base, base + ".s", f"-Wl,-soname,{name}",
                    f"-Wl,--version-script={base}.map"], check=True)
    os.remove(base + ".s")
    os.remove(base + ".map")
    print(f"{name}: {len(syms)} symbols")


main()
