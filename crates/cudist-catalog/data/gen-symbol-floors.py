#!/usr/bin/env python3
"""Writes symbol-floors.json: for the CUDA libraries listed below, the first release of their
wheel that exports each dynamic symbol the first release of that CUDA major did not.

A file that imports such a symbol fails to load with an older release ("undefined symbol:
__nvJitLinkGetErrorLog_13_1" with nvJitLink 13.0; NVIDIA/cuvs#1862), so the symbol raises the
lower bound of the requirement `cudist repair` writes, and `cudist doctor` checks the release
installed against it.

Source: the wheels themselves. Every release of each distribution listed in pip-wheels.json is
downloaded from PyPI (`pip download --no-deps`) and its library's defined dynamic symbols are read
with binutils' `nm -D --defined-only`. Run from anywhere; needs pip, unzip and nm:

    python3 crates/cudist-catalog/data/gen-symbol-floors.py [CACHE_DIR]
"""
import datetime
import json
import os
import subprocess
import sys
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
# (catalog library id, CUDA major, pip distribution)
LIBRARIES = [
    ("nvjitlink", 12, "nvidia-nvjitlink-cu12"),
    ("nvjitlink", 13, "nvidia-nvjitlink"),
    ("cudart", 12, "nvidia-cuda-runtime-cu12"),
    ("cudart", 13, "nvidia-cuda-runtime"),
]


def key(version):
    return tuple(int(p) if p.isdigit() else 0 for p in version.split("."))


def exported(wheel, member):
    with zipfile.ZipFile(wheel) as z, tempfile.TemporaryDirectory() as t:
        path = z.extract(member, t)
        out = subprocess.run(
            ["nm", "-D", "--defined-only", path], check=True, capture_output=True, text=True
        ).stdout
    names = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TWDBRVi":
            names.add(parts[2].split("@")[0])
    return names


def main():
    cache = sys.argv[1] if len(sys.argv) > 1 else os.path.join(tempfile.gettempdir(), "cudist-floors")
    os.makedirs(cache, exist_ok=True)
    wheels = json.load(open(os.path.join(HERE, "pip-wheels.json")))
    rows = []
    for lib, major, pip in LIBRARIES:
        releases = sorted(wheels[pip], key=key)
        first_seen = {}
        for v in releases:
            member = wheels[pip][v][0]
            dest = os.path.join(cache, f"{pip}-{v}")
            os.makedirs(dest, exist_ok=True)
            found = [f for f in os.listdir(dest) if f.endswith(".whl")]
            if not found:
                subprocess.run(
                    [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                     "--only-binary=:all:", "--platform", "manylinux2014_x86_64",
                     "--python-version", "3.11", f"{pip}=={v}", "-d", dest],
                    check=True,
                )
                found = [f for f in os.listdir(dest) if f.endswith(".whl")]
            for s in exported(os.path.join(dest, found[0]), member):
                first_seen.setdefault(s, v)
        base = releases[0]
        since = {s: v for s, v in sorted(first_seen.items()) if v != base}
        rows.append({
            "library": lib,
            "major": major,
            "pip": pip,
            "releases_read": f"{base} to {releases[-1]} ({len(releases)} releases)",
            "since": since,
        })
        print(f"{pip}: {len(since)} symbols newer than {base}", file=sys.stderr)
    doc = {
        "source": "the defined dynamic symbols (nm -D --defined-only) of every release of each "
        "wheel on PyPI listed in pip-wheels.json, read by gen-symbol-floors.py on "
        + datetime.date.today().isoformat(),
        "libraries": rows,
    }
    with open(os.path.join(HERE, "symbol-floors.json"), "w") as f:
        json.dump(doc, f, indent=1, sort_keys=False)
        f.write("\n")


if __name__ == "__main__":
    main()
