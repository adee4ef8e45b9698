#!/usr/bin/env python3
"""Packs a CUDA build of flowd for a lent GPU machine (tools/gpu/README.md).

The device machine has the CUDA driver and toolkit but none of the Debian
libraries flowd links (OpenCV, ZeroMQ, HDF5, Boost, FFTW), and nothing there can
be installed. This script puts every ELF file of the build folder and the
shared libraries they need (their NEEDED closure, glibc and the CUDA driver
left out) into one compressed tar that travels with `carry` and unpacks at the
same absolute path there. OpenCV's imgcodecs links GDAL and GDCM, and HDF5
links curl and OpenSSL for its S3 driver; flowd reads no format that needs
them, so they travel as stand-ins (stub_lib.py) instead of their 100 MB
closure. OpenEXR travels for real: OpenCV builds an EXR encoder object while
it registers its codecs.

    tools/gpu/pack.py BUILD_DIR OUT_DIR      # writes OUT_DIR/bundle.tar.xz and OUT_DIR/paths

The build's paths are absolute (the source and build directories CMake
baked into the programs: test data, plugin folders, RPATHs), so OUT_DIR/paths
says which they are (`source=...`, `build=...` relative to the source), and
tools/gpu/device-check.sh recreates them on the device machine.
"""
import os
import re
import subprocess
import sys
import tarfile
import tempfile

# Provided by the machine itself: glibc, the loader, the CUDA driver.
SYSTEM = re.compile(r"^(libc|libm|libdl|libpthread|librt|libresolv|libutil|ld-linux-x86-64|libcuda|libnvidia-.*)\.so")
# Linked but never called by flowd: replaced by stand-ins.
STUBBED = {"libgdal.so.32", "libgdcmMSFF.so.3.0", "libgdcmDSED.so.3.0", "libcurl.so.4",
           "libcrypto.so.3"}


def run(*cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def is_elf(path):
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def needed(path):
    return re.findall(r"\(NEEDED\)\s+Shared library: \[(.+)\]", run("readelf", "-d", path))


def system_paths():
    paths = {}
    for line in run("ldconfig", "-p").splitlines():
        m = re.match(r"\s+(\S+) \(libc6,x86-64.*\) => (\S+)", line)
        if m and m.group(1) not in paths:
            paths[m.group(1)] = m.group(2)
    return paths


def cmake_source(build):
    """The source directory CMake configured `build` from (CMakeCache.txt)."""
    try:
        with open(os.path.join(build, "CMakeCache.txt")) as f:
            for line in f:
                if line.startswith("CMAKE_HOME_DIRECTORY:"):
                    return line.split("=", 1)[1].strip()
    except OSError as e:
        sys.exit(f"pack: {build} is not a CMake build folder: {e}")
    sys.exit(f"pack: {build}/CMakeCache.txt names no CMAKE_HOME_DIRECTORY")


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    build, out = sys.argv[1].rstrip("/"), sys.argv[2]
    source = os.path.realpath(cmake_source(build))
    build_rel = os.path.relpath(os.path.realpath(build), source)
    if build_rel.startswith(".."):
        sys.exit(f"pack: the build folder {build} is not inside its source {source}")
    elfs = []
    for root, dirs, files in os.walk(build):
        dirs[:] = [d for d in dirs if d != "CMakeFiles" and d != "test-tmp"]
        for f in files:
            p = os.path.join(root, f)
            if not f.endswith((".o", ".a")) and is_elf(p):
                elfs.append(p)
    in_build = {os.path.basename(p): p for p in elfs}
    sys_paths = system_paths()
    consumers = {}  # stubbed soname -> libraries importing from it
    libs, todo, seen = {}, list(elfs), set()
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        for name in needed(p):
            if SYSTEM.match(name) or name in in_build:
                continue
            if name in STUBBED:
                consumers.setdefault(name, set()).add(p)
                continue
            real = sys_paths.get(name)
            if real is None:
                sys.exit(f"pack: {p} needs {name}, which this machine does not have")
            if real.startswith("/usr/local/cuda"):
                continue  # the device machine has the same CUDA toolkit
            libs[name] = real
            todo.append(real)
    os.makedirs(out, exist_ok=True)
    with tempfile.TemporaryDirectory() as stubs:
        here = os.path.dirname(os.path.abspath(__file__))
        for name, users in sorted(consumers.items()):
            subprocess.run([sys.executable, os.path.join(here, "stub_lib.py"), sys_paths[name], stubs, *sorted(users)],
                           check=True)
        target = os.path.join(out, "bundle.tar.xz")
        with tarfile.open(target, "w:xz", preset=6, dereference=True) as tar:
            for p in sorted(elfs):
                tar.add(p, arcname=p)
            for name, real in sorted(libs.items()):
                tar.add(real, arcname=os.path.join(".device-lib", name))
            for name in sorted(consumers):
                tar.add(os.path.join(stubs, name), arcname=os.path.join(".device-lib", name))
    with open(os.path.join(out, "paths"), "w") as f:
        f.write(f"source={source}\nbuild={build_rel}\n")
    size = os.path.getsize(target) / 2**20
    print(f"pack: {len(elfs)} files of {build}, {len(libs)} libraries, {len(consumers)} stand-ins -> {target} "
          f"({size:.1f} MiB)")


main()
