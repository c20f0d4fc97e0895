#!/usr/bin/env python3
"""Install a set of local conda package files into a fresh prefix, fully offline: the
conda-compatible installer (py-rattler) that the split tests install `cudist split --format conda`
packages with.

usage: python scripts/conda-install-local.py [--cache-dir DIR] PREFIX PKG.conda [PKG.conda ...]

Exactly the given packages are installed: no channel, no repodata.json, no solve,
no network. Every `depends` entry of every package must be satisfied by the given
set (virtual packages such as `__glibc` are not checked), otherwise nothing is
installed and the exit code is 1. After linking, every path listed in each
package's info/paths.json and each conda-meta/<name>-<version>-<build>.json is
checked to exist in PREFIX.

Requires: pip install py-rattler==0.28.0
"""
from __future__ import annotations

import argparse
import asyncio
import hashlib
import os
import shutil
import sys
import tempfile
from pathlib import Path

try:
    from rattler import MatchSpec, PackageRecord, PathsJson, RepoDataRecord, Subdir, install
    from rattler.exceptions import ValidatePackageRecordsError
except ImportError:  # pragma: no cover
    sys.exit("error: py-rattler is not installed (pip install py-rattler==0.28.0)")


class InstallFailure(Exception):
    pass


def _dist(rec: RepoDataRecord) -> str:
    return f"{rec.name.normalized}-{rec.version}-{rec.build}"


async def load_records(files: list[Path]) -> list[RepoDataRecord]:
    records = []
    for f in files:
        if not f.is_file():
            raise InstallFailure(f"no such package file: {f}")
        if not (f.name.endswith(".conda") or f.name.endswith(".tar.bz2")):
            raise InstallFailure(f"not a conda package (.conda/.tar.bz2): {f}")
        try:
            # Reads info/index.json, computes sha256/md5/size, url = file://<abs path>.
            records.append(await RepoDataRecord.from_package_archive(f))
        except Exception as e:
            raise InstallFailure(f"cannot read package {f}: {e}") from e
    return records


def check_consistency(records: list[RepoDataRecord]) -> None:
    seen: dict[str, RepoDataRecord] = {}
    for r in records:
        n = r.name.normalized
        if n in seen:
            raise InstallFailure(f"package '{n}' given twice: {seen[n].file_name} and {r.file_name}")
        seen[n] = r

    problems = []
    for r in records:
        for dep in r.depends:
            if dep.startswith("__"):  # virtual package (__glibc, __unix, ...): not checked
                continue
            spec = MatchSpec(dep)
            if not any(spec.matches(o) for o in records):
                problems.append(f"  {_dist(r)} ({r.file_name}) depends on '{dep}', not satisfied by the given packages")
    if problems:
        raise InstallFailure("unsatisfied dependencies:\n" + "\n".join(problems))
    try:
        PackageRecord.validate(records)  # also checks `constrains`
    except ValidatePackageRecordsError as e:
        raise InstallFailure(f"inconsistent package set: {e}") from e

    here = str(Subdir.current())
    for r in records:
        if r.subdir not in (here, "noarch"):
            raise InstallFailure(f"{r.file_name} is for subdir '{r.subdir}', this machine is '{here}'")
        if r.noarch.python and not any(o.name.normalized == "python" for o in records):
            raise InstallFailure(f"{r.file_name} is noarch: python but no python package is in the set")


def _sha256(p: Path) -> str:
    h = hashlib.sha256()
    with open(p, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def load_paths(files: list[Path]) -> list[PathsJson]:
    out, owner, clashes = [], {}, []
    for f in files:
        try:
            pj = PathsJson.from_package_archive(f)
        except Exception as e:
            raise InstallFailure(f"cannot read info/paths.json from {f}: {e}") from e
        for e in pj.paths:
            p = str(e.relative_path)
            if p in owner:
                clashes.append(f"  {p}: in {owner[p]} and {f.name}")
            owner[p] = f.name
        out.append(pj)
    if clashes:
        # rattler would silently let one package win (loser recorded under __clobbers__/)
        raise InstallFailure("file conflicts between packages:\n" + "\n".join(clashes))
    return out


def verify(prefix: Path, records: list[RepoDataRecord], paths: list[PathsJson]) -> int:
    """Return number of verified paths; raise InstallFailure on any problem."""
    problems, n = [], 0
    for r, pj in zip(records, paths):
        meta = prefix / "conda-meta" / f"{_dist(r)}.json"
        if not meta.is_file():
            problems.append(f"  missing {meta}")
        for e in pj.paths:
            p = prefix / str(e.relative_path)
            n += 1
            if e.path_type.softlink:
                # rattler recreates the symlink; it may dangle if its target is in another package
                ok = p.is_symlink()
            elif e.path_type.directory:
                ok = p.is_dir()
            else:
                ok = p.is_file() and not p.is_symlink()
                # files with a prefix placeholder are rewritten on install, so their hash changes
                if ok and e.prefix_placeholder is None and e.sha256 is not None:
                    ok = _sha256(p) == e.sha256.hex()
                    if not ok:
                        problems.append(f"  sha256 mismatch: {p} ({r.file_name})")
                        continue
            if not ok:
                problems.append(f"  missing/wrong type ({e.path_type}): {p} ({r.file_name})")
    if problems:
        raise InstallFailure("post-install verification failed:\n" + "\n".join(problems))
    return n


async def run(prefix: Path, files: list[Path], cache_dir: Path | None) -> None:
    if prefix.exists() and (not prefix.is_dir() or any(prefix.iterdir())):
        # rattler.install treats `records` as the complete desired environment and would
        # remove anything else already installed, so insist on a fresh prefix.
        raise InstallFailure(f"prefix {prefix} exists and is not empty; use a fresh prefix")
    records = await load_records(files)
    check_consistency(records)
    paths = load_paths(files)

    created = not prefix.exists()
    try:
        with tempfile.TemporaryDirectory(prefix="rattler-pkgs-") as tmp:
            await install(
                records,
                target_prefix=prefix,
                cache_dir=cache_dir or Path(tmp),  # fresh cache: never reuse a stale extraction
                installed_packages=[],  # fresh prefix: nothing to unlink
                execute_link_scripts=False,
                show_progress=False,
            )
        n = verify(prefix, records, paths)
    except BaseException:
        # never leave a half-installed prefix behind (it was fresh/empty before)
        if created:
            shutil.rmtree(prefix, ignore_errors=True)
        else:
            for c in prefix.iterdir():
                shutil.rmtree(c) if c.is_dir() and not c.is_symlink() else c.unlink()
        print(f"note: removed partially installed contents of {prefix}", file=sys.stderr)
        raise
    print(f"installed {len(records)} package(s) into {prefix}:")
    for f, r in sorted(zip(files, records), key=lambda t: t[1].name.normalized):
        print(f"  {r.name.normalized} {r.version} {r.build} [{r.subdir}]  <- {f}")
    print(f"verified {n} path(s) and {len(records)} conda-meta record(s)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("prefix", type=Path)
    ap.add_argument("packages", type=Path, nargs="+", metavar="PKG.conda")
    ap.add_argument("--cache-dir", type=Path, default=None,
                    help="package cache to extract into (default: a temporary directory)")
    a = ap.parse_args(argv)
    try:
        asyncio.run(run(a.prefix.absolute(), [p.absolute() for p in a.packages], a.cache_dir))
    except InstallFailure as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except Exception as e:  # rattler InstallerError, LinkError, ...
        print(f"error: installation failed: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    rc = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # py-rattler 0.28.0 bug: a tokio thread spawned by RepoDataRecord.from_package_archive
    # can still be touching the GIL while the interpreter finalizes, which aborts/segfaults
    # (rc 134/139) in ~30% of runs. Skip interpreter finalization entirely.
    os._exit(rc)
