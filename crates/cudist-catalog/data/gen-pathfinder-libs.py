#!/usr/bin/env python3
"""Writes pathfinder-libs.json: cuda-pathfinder's own table of the libraries
`cuda.pathfinder.load_nvidia_dynamic_lib(name)` loads on Linux — for each name, the SONAMEs it
tries (most preferred first), the libraries it loads first (`dependencies`, and best-effort
`optional_dependencies`), and the site-packages directories it looks in.

Source: cuda-pathfinder's `cuda/pathfinder/_dynamic_libs/descriptor_catalog.py` (NVIDIA/cuda-python,
Apache-2.0), read from the wheel on PyPI with Python's `ast` (never run). `cudist doctor` reads the
same table from the cuda-pathfinder installed in the environment it checks when there is one; this
file serves the static path (inspect, repair) and environments without it. Run from anywhere;
needs pip:

    python3 crates/cudist-catalog/data/gen-pathfinder-libs.py [VERSION]
"""
import ast
import datetime
import json
import os
import subprocess
import sys
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
VERSION = sys.argv[1] if len(sys.argv) > 1 else "1.9.1"
MEMBER = "cuda/pathfinder/_dynamic_libs/descriptor_catalog.py"
FIELDS = ("linux_sonames", "dependencies", "optional_dependencies", "site_packages_linux")

with tempfile.TemporaryDirectory() as tmp:
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", tmp,
         f"cuda-pathfinder=={VERSION}"],
        check=True,
    )
    (wheel,) = [f for f in os.listdir(tmp) if f.endswith(".whl")]
    with zipfile.ZipFile(os.path.join(tmp, wheel)) as z:
        text = z.read(MEMBER).decode()

libs = {}
for node in ast.walk(ast.parse(text)):
    if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "DescriptorSpec"):
        continue
    kw = {k.arg: k.value for k in node.keywords}
    name = ast.literal_eval(kw["name"])
    entry = {f: list(ast.literal_eval(kw[f])) if f in kw else [] for f in FIELDS}
    entry["packaged_with"] = ast.literal_eval(kw["packaged_with"])
    if entry["linux_sonames"]:
        libs[name] = entry

out = {
    "source": f"cuda-pathfinder {VERSION} from PyPI ({wheel}), {MEMBER}: the DescriptorSpec "
    f"entries with Linux SONAMEs, read by gen-pathfinder-libs.py on {datetime.date.today()}",
    "version": VERSION,
    "libs": libs,
}
with open(os.path.join(HERE, "pathfinder-libs.json"), "w") as f:
    json.dump(out, f, indent=1, sort_keys=False)
    f.write("\n")
print(f"{len(libs)} libraries from cuda-pathfinder {VERSION}")
