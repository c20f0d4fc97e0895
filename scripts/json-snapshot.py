#!/usr/bin/env python3
"""Behaviour snapshots for refactors: the `--json` output of every cudist command on the test corpus.

    scripts/json-snapshot.py take DIR [--cudist BIN]   # run every case, write DIR/<case>.json
    scripts/json-snapshot.py compare OLD NEW           # exit 1 and show the differences, if any

Take a snapshot before a refactor and another after it, then compare: the outputs must be equal.
Each case is stored as {"args", "exit", "stdout"} with stdout parsed as JSON (or kept as text when
it is not JSON). Before storing, the values that legitimately change from run to run are
normalised: the scratch directory (${CUDIST_CACHE}/json-snapshot-work) becomes "<WORK>", the repository "<REPO>", the cache
"<CACHE>"; "seconds" (wall time) becomes 0. Nothing else is touched, so any other difference is a
change of behaviour.

The corpus: the committed device-code fixtures, the real wheels scripts/test.sh downloads into
${CUDIST_CACHE:-.cache}/wheels (cupy-cuda12x, the CUDA runtime wheels), auditwheel's own test wheels
(../shared/peer-suites/auditwheel-bundled-wheels, when present), and the CUDA 13 and 12 environments
of ${CUDIST_CACHE}/toolkit (toolkit, split, doctor). Cases whose inputs are missing are skipped and
listed, so run scripts/test.sh once first for the full set.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("CUDIST_CACHE", REPO / ".cache")).resolve()
PEER = (Path(os.environ.get("CUDIST_SHARED") or REPO.parent / "shared") / "peer-suites/auditwheel-bundled-wheels").resolve()
TIMING_KEYS = {"seconds"}


def cases(work: Path) -> tuple[list[tuple[str, list[str]]], list[str]]:
    """(name, arguments) of every case, and the names of those skipped for want of inputs."""
    out: list[tuple[str, list[str]]] = []
    skipped: list[str] = []
    fixtures = REPO / "tests/fixtures/device"
    out.append(("inspect-fixtures", ["inspect", "--json", str(fixtures)]))
    out.append(("inspect-fixtures-files-entries", ["inspect", "--json", "--files", "--entries", str(fixtures)]))
    out.append(("doctor-fixtures", ["doctor", "--json", "--ld-library-path", "", str(fixtures)]))
    relinked = work / "relink-tree"
    out.append(("relink-fixtures-dry-run", ["relink", "--json", "--dry-run", "--driver-runpath", "/run/opengl-driver/lib", "--origin", str(relinked)]))
    out.append(("relink-fixtures-check", ["relink", "--json", "--check", str(relinked)]))
    for sub in (["lib", "libcublas.so.12"], ["lib", "libcurand.so.10"], ["sm"], ["sm", "--cuda", "13.0"], ["driver", "12.8"], ["list"]):
        out.append(("catalog-" + "-".join(s.strip("-") for s in sub), ["catalog", *sub, "--json"]))

    wheels = sorted((CACHE / "wheels").glob("*.whl"))
    if not wheels:
        skipped.append(f"real wheels ({CACHE / 'wheels'} is empty)")
    peer = sorted(PEER.rglob("*.whl")) if PEER.is_dir() else []
    if not peer:
        skipped.append(f"auditwheel's test wheels ({PEER} is missing)")
    for w in wheels + peer:
        stem = w.name[: -len(".whl")]
        if w.parent != PEER and PEER in w.parents:
            stem = f"{w.parent.relative_to(PEER)}-{stem}".replace("/", "-")
        out.append((f"inspect-{stem}", ["inspect", "--json", str(w)]))
        out.append((f"repair-{stem}", ["repair", "--json", "--dry-run", "-w", str(work / "repaired"), str(w)]))

    for major in ("cu13", "cu12"):
        venv = CACHE / "toolkit" / major
        if not (venv / "bin/python").exists():
            skipped.append(f"toolkit {major} ({venv} is missing)")
            continue
        root = work / f"root-{major}"
        out.append((f"toolkit-{major}", ["toolkit", "--json", "--python", str(venv / "bin/python"), "--out", str(root)]))
        out.append((f"toolkit-env-{major}", ["toolkit", "env", "--json", str(root)]))
        out.append((f"split-root-{major}", ["split", "--json", "--format", "manifest", "--out", str(work / f"split-root-{major}"), str(root)]))
        site = next((venv / "lib").glob("python3*/site-packages"))
        out.append((f"split-site-{major}", ["split", "--json", "--format", "manifest", "--out", str(work / f"split-site-{major}"), str(site)]))
    return out, skipped


def normalise(value, work: Path):
    if isinstance(value, dict):
        return {k: (0 if k in TIMING_KEYS else normalise(v, work)) for k, v in value.items()}
    if isinstance(value, list):
        return [normalise(v, work) for v in value]
    if isinstance(value, str):
        # Longest first: the scratch directory may lie inside the cache.
        for path, name in sorted(
            ((str(work), "<WORK>"), (str(CACHE), "<CACHE>"), (str(REPO), "<REPO>")),
            key=lambda p: -len(p[0]),
        ):
            value = value.replace(path, name)
        return value
    return value


def take(dest: Path, cudist: str) -> int:
    dest.mkdir(parents=True, exist_ok=False)
    # A fixed scratch directory, not a random one: toolkit writes its root's path into the .pc
    # files, whose sha256 split reports.
    work = CACHE / "json-snapshot-work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    try:
        shutil.copytree(REPO / "tests/fixtures/device", work / "relink-tree", symlinks=True)
        todo, skipped = cases(work)
        for name, args in todo:
            run = subprocess.run([cudist, *args], capture_output=True, env={**os.environ, "NO_COLOR": "1"})
            text = run.stdout.decode("utf-8", "replace")
            try:
                stdout = json.loads(text)
            except json.JSONDecodeError:
                stdout = text
            record = {"args": normalise(args, work), "exit": run.returncode, "stdout": normalise(stdout, work)}
            (dest / f"{name}.json").write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
            print(f"{name}: exit {run.returncode}", file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for s in skipped:
        print(f"skipped: {s}", file=sys.stderr)
    print(f"{len(todo)} cases in {dest}", file=sys.stderr)
    return 0


def compare(old: Path, new: Path) -> int:
    a = {p.name for p in old.glob("*.json")}
    b = {p.name for p in new.glob("*.json")}
    bad = 0
    for name in sorted(a ^ b):
        print(f"only in {'old' if name in a else 'new'}: {name}")
        bad += 1
    for name in sorted(a & b):
        x = (old / name).read_text().splitlines(keepends=True)
        y = (new / name).read_text().splitlines(keepends=True)
        if x != y:
            bad += 1
            sys.stdout.writelines(difflib.unified_diff(x, y, f"old/{name}", f"new/{name}", n=2))
    print(f"{len(a & b)} cases compared, {bad} differ" if bad else f"{len(a & b)} cases, all equal")
    return 1 if bad else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("take", help="run every case into DIR (which must not exist)")
    t.add_argument("dir", type=Path)
    t.add_argument("--cudist", default=str(REPO / "target/debug/cudist"), help="the binary (default: target/debug/cudist)")
    c = sub.add_parser("compare", help="compare two snapshots")
    c.add_argument("old", type=Path)
    c.add_argument("new", type=Path)
    args = ap.parse_args()
    if args.cmd == "take":
        return take(args.dir, args.cudist)
    return compare(args.old, args.new)


if __name__ == "__main__":
    sys.exit(main())
