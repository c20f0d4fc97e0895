#!/usr/bin/env python3
"""The release lists of every NVIDIA wheel the catalog names, as pip sees them, and the library
files each release's Linux x86_64 wheel installs.

    scripts/pip-index.py            # rewrite crates/cudist-catalog/data/pip-index.json and pip-wheels.json
    scripts/pip-index.py --check    # compare the index with the snapshot; exit 1 on a difference

`cudist repair` writes `Requires-Dist` ranges from the catalog (crates/cudist-catalog/data/
libraries.toml: the SONAME's version, or `pip_versions` where a package's version does not follow
its SONAME). A range no release satisfies makes the repaired wheel uninstallable, so the catalog's
tests check every range against the releases recorded here (the `pip_ranges_have_releases` test of
cudist-catalog). The lists come from `pip index versions NAME` on this platform and Python: the
releases pip can install here, newest first. Refresh them when NVIDIA publishes a new CUDA line.

pip-wheels.json holds, per package and release, the `lib*.so*` files its manylinux x86_64 wheel
installs (path inside site-packages). No wheel is downloaded: the zip central directory at the end
of each wheel is read with HTTP range requests (tail, end-of-central-directory record, ZIP64 when
needed, then the directory itself). The catalog's tests check that the releases a range admits
install each SONAME in the catalog's wheel directory.
"""

from __future__ import annotations

import datetime
import json
import re
import struct
import urllib.parse
import urllib.request
import subprocess
import sys
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "crates/cudist-catalog/data"
SNAPSHOT = DATA / "pip-index.json"
WHEELS = DATA / "pip-wheels.json"
PYPI = "https://pypi.org/pypi/{}/json"


def packages() -> list[str]:
    lib = tomllib.loads((DATA / "libraries.toml").read_text())
    return sorted({m["pip"] for l in lib["library"] for m in l.get("cuda", []) if m.get("pip")})


def versions(name: str) -> tuple[str, list[str]]:
    r = subprocess.run(
        [sys.executable, "-m", "pip", "index", "versions", name],
        capture_output=True, text=True, timeout=300,
    )
    m = re.search(r"Available versions: (.*)", r.stdout)
    return name, (m.group(1).strip().split(", ") if m else [])


def get(url: str, byte_range: str | None = None) -> bytes:
    req = urllib.request.Request(url, headers={"Range": f"bytes={byte_range}"} if byte_range else {})
    with urllib.request.urlopen(req, timeout=120) as r:
        return r.read()


def central_directory_names(url: str) -> list[str]:
    """The member names of a remote zip, from its central directory alone."""
    tail = get(url, "-65536")
    eocd = tail.rfind(b"PK\x05\x06")
    if eocd < 0:
        raise ValueError("no end-of-central-directory record in the last 64 KiB")
    count, size, offset = struct.unpack_from("<HII", tail, eocd + 10)
    if 0xFFFFFFFF in (size, offset) or count == 0xFFFF:
        loc = tail.rfind(b"PK\x06\x07", 0, eocd)
        (z64,) = struct.unpack_from("<Q", tail, loc + 8)
        rec = get(url, f"{z64}-{z64 + 55}")
        count, size, offset = struct.unpack_from("<QQQ", rec, 32)
    data = get(url, f"{offset}-{offset + size - 1}")
    names, pos = [], 0
    for _ in range(count):
        if data[pos : pos + 4] != b"PK\x01\x02":
            raise ValueError("damaged central directory")
        n, m, k = struct.unpack_from("<HHH", data, pos + 28)
        names.append(data[pos + 46 : pos + 46 + n].decode("utf-8", "replace"))
        pos += 46 + n + m + k
    return names


def wheel_libraries(name: str, releases: list[str]) -> tuple[str, dict[str, list[str]]]:
    """Per release pip lists: the lib*.so* files of its manylinux x86_64 wheel."""
    api = PYPI.format(name)
    meta = json.loads(get(api))
    out: dict[str, list[str]] = {}
    for version in releases:
        files = [f for f in meta["releases"].get(version, []) if not f.get("yanked")]
        wheels = [f for f in files if f["filename"].endswith("x86_64.whl") and "manylinux" in f["filename"]]
        wheels.sort(key=lambda f: ("-py3-none-" not in f["filename"], f["filename"]))
        if not wheels:
            continue
        # The index may answer with URLs relative to the API's.
        members = central_directory_names(urllib.parse.urljoin(api, wheels[0]["url"]))
        out[version] = sorted(
            m for m in members if re.fullmatch(r"lib[^/]*\.so(\.[^/]*)?", m.rsplit("/", 1)[-1])
        )
    return name, out


def write_wheels(found: dict[str, list[str]]) -> None:
    with ThreadPoolExecutor(8) as ex:
        wheels = dict(ex.map(lambda item: wheel_libraries(*item), sorted(found.items())))
    blocks = []
    for name, releases in sorted(wheels.items()):
        rows = ",\n".join(f"  {json.dumps(v)}: {json.dumps(f)}" for v, f in releases.items())
        blocks.append(f" {json.dumps(name)}: {{\n{rows}\n }}")
    WHEELS.write_text("{\n" + ",\n".join(blocks) + "\n}\n")
    print(f"{sum(map(len, wheels.values()))} wheels read -> {WHEELS}")


def main() -> int:
    check = sys.argv[1:] == ["--check"]
    if sys.argv[1:] not in ([], ["--check"]):
        print(__doc__, file=sys.stderr)
        return 2
    with ThreadPoolExecutor(8) as ex:
        found = dict(ex.map(versions, packages()))
    if check:
        old = json.loads(SNAPSHOT.read_text())["packages"]
        diff = {n: (old.get(n), v) for n, v in found.items() if old.get(n) != v}
        for n, (a, b) in sorted(diff.items()):
            added = [v for v in b if v not in (a or [])]
            gone = [v for v in (a or []) if v not in b]
            print(f"{n}: new {added or '-'}; no longer listed {gone or '-'}")
        return 1 if diff else 0
    snapshot = {
        "date": datetime.date.today().isoformat(),
        "method": "pip index versions NAME (pip "
        + subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True, text=True).stdout.split()[1]
        + f", Python {sys.version.split()[0]}, linux x86_64): releases pip can install on this platform, newest first",
        "packages": found,
    }
    # One line per package, so that a refresh reads as a diff of release lists.
    lines = [f" {json.dumps(n)}: {json.dumps(v)}" for n, v in sorted(found.items())]
    head = json.dumps({k: snapshot[k] for k in ("date", "method")}, indent=1)[:-2]
    SNAPSHOT.write_text(head + ',\n "packages": {\n' + ",\n".join(lines) + "\n }\n}\n")
    write_wheels(found)
    missing = [n for n, v in found.items() if not v]
    print(f"{len(found)} packages, {sum(map(len, found.values()))} releases -> {SNAPSHOT}")
    if missing:
        print("no releases found for: " + ", ".join(missing), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
