#!/usr/bin/env python3
"""The release lists of every NVIDIA wheel the catalog names, as pip sees them, the library
files and requirements of each release's Linux x86_64 wheel, and the RAPIDS C++ wheels that other
wheels load libraries from.

    scripts/pip-index.py                    # rewrite every file below
    scripts/pip-index.py requires providers # rewrite only those (targets: index, requires, providers)
    scripts/pip-index.py --check [TARGET..] # compare PyPI with the snapshots; exit 1 on a difference

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
(Target `index`: pip-index.json and pip-wheels.json.)

pip-requires.json holds, for every release pip-index.json lists, the `Requires-Dist` lines of the
same wheel pip-wheels.json reads, exactly as its METADATA writes them (markers kept); releases with
no such wheel are left out. METADATA comes from the `.metadata` file beside the wheel (PEP 658/714)
where PyPI advertises (`core-metadata`) and serves one, else from the wheel's own
`*.dist-info/METADATA`, read with range requests like the central directory (local header, then
the member's bytes, inflated); both are the same file. Only where neither can be had does it fall
back to `https://pypi.org/pypi/NAME/VERSION/json` `info.requires_dist`, and lists the release under
`fallback`. The release lists come from pip-index.json as it stands, so `requires` alone never
touches it. (Target `requires`.)

provider-wheels.json holds wheels that are not part of the CUDA toolkit but ship shared libraries
other wheels link against and load: RAPIDS' C++ wheels (PROVIDERS below; candidates PyPI does not
know are listed under `absent`, those with no wheel to read, only placeholder sdists, under
`without_wheels`). Per package: its top-level module, and for its newest 4 final
releases (PEP 440 order) with a manylinux x86_64 wheel for CPython or py3-none: every `*.so` /
`*.so.*` member (`libraries`), its `Requires-Dist` (`requires_dist`, as above), and, where the
module has a `load.py` or its `__init__.py` defines `load_library`, what that file loads (`load`:
the file, whether it defines `load_library`, the string literals that look like library names,
the other modules whose `load_library()` it calls, and the names it hands to cuda.pathfinder's
`load_nvidia_dynamic_lib`). (Target `providers`.)
"""

from __future__ import annotations

import ast
import datetime
import email.parser
import email.policy
import http.client
import json
import re
import struct
import time
import urllib.error
import urllib.parse
import urllib.request
import subprocess
import sys
import tomllib
import zlib
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple

try:
    from packaging.version import InvalidVersion, Version
except ModuleNotFoundError:  # pip carries its own copy, and this script runs pip anyway
    from pip._vendor.packaging.version import InvalidVersion, Version

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "crates/cudist-catalog/data"
SNAPSHOT = DATA / "pip-index.json"
WHEELS = DATA / "pip-wheels.json"
REQUIRES = DATA / "pip-requires.json"
PROVIDER_WHEELS = DATA / "provider-wheels.json"
PYPI = "https://pypi.org/pypi/{}/json"
PYPI_RELEASE = "https://pypi.org/pypi/{}/{}/json"
# RAPIDS' C++ wheels: libraries that other wheels (cudf, cuml, ucxx, ...) link against and load
# through the provider's `load_library()`. Names PyPI does not know are skipped.
PROVIDERS = [
    "rapids-logger",
    *(f"lib{n}-cu{m}" for n in ("rmm", "kvikio", "cudf", "raft", "cuvs", "cugraph", "cuml", "ucxx", "ucx",
                                 "cuspatial", "cugraph-etl") for m in (12, 13)),
]
PROVIDER_RELEASES = 4
# A string literal that names a library, as load.py files write them.
LIBRARY_NAME = re.compile(r"lib[^\"']*\.so(\.[0-9]+)*")


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


def get(url: str, byte_range: str | None = None, tries: int = 4) -> bytes:
    req = urllib.request.Request(url, headers={"Range": f"bytes={byte_range}"} if byte_range else {})
    for attempt in range(tries):
        try:
            with urllib.request.urlopen(req, timeout=120) as r:
                return r.read()
        except urllib.error.HTTPError as e:
            if e.code not in (408, 429, 500, 502, 503, 504) or attempt == tries - 1:
                raise
        except (OSError, http.client.HTTPException):  # timeouts, resets, short reads
            if attempt == tries - 1:
                raise
        time.sleep(2**attempt)
    raise AssertionError("unreachable")


class Member(NamedTuple):
    name: str
    method: int  # 0 stored, 8 deflated
    size: int  # compressed
    offset: int  # of its local header


def central_directory(url: str) -> list[Member]:
    """The members of a remote zip, from its central directory alone."""
    tail = get(url, "-65536")
    eocd = tail.rfind(b"PK\x05\x06")
    if eocd < 0:
        raise ValueError("no end-of-central-directory record in the last 64 KiB")
    count, size, offset = struct.unpack_from("<HII", tail, eocd + 10)
    end = eocd  # the directory ends where the end records start
    if 0xFFFFFFFF in (size, offset) or count == 0xFFFF:
        loc = tail.rfind(b"PK\x06\x07", 0, eocd)
        (z64,) = struct.unpack_from("<Q", tail, loc + 8)
        rec = get(url, f"{z64}-{z64 + 55}")
        count, size, offset = struct.unpack_from("<QQQ", rec, 32)
        end = tail.rfind(b"PK\x06\x06", 0, loc)
    # Most wheels' directories fit in the tail already read.
    if end - size >= 0 and tail[end - size : end - size + 4] == b"PK\x01\x02":
        data = tail[end - size : end]
    else:
        data = get(url, f"{offset}-{offset + size - 1}")
    members, pos = [], 0
    for _ in range(count):
        if data[pos : pos + 4] != b"PK\x01\x02":
            raise ValueError("damaged central directory")
        (method,) = struct.unpack_from("<H", data, pos + 10)
        csize, usize = struct.unpack_from("<II", data, pos + 20)
        n, m, k = struct.unpack_from("<HHH", data, pos + 28)
        (local,) = struct.unpack_from("<I", data, pos + 42)
        extra, e = data[pos + 46 + n : pos + 46 + n + m], 0
        while e + 4 <= len(extra):  # ZIP64 extra field: the 32-bit values that overflowed, in order
            tag, length = struct.unpack_from("<HH", extra, e)
            if tag == 1:
                values = iter(struct.unpack_from(f"<{length // 8}Q", extra, e + 4))
                usize = next(values) if usize == 0xFFFFFFFF else usize
                csize = next(values) if csize == 0xFFFFFFFF else csize
                local = next(values) if local == 0xFFFFFFFF else local
            e += 4 + length
        members.append(Member(data[pos + 46 : pos + 46 + n].decode("utf-8", "replace"), method, csize, local))
        pos += 46 + n + m + k
    return members


def central_directory_names(url: str) -> list[str]:
    """The member names of a remote zip, from its central directory alone."""
    return [m.name for m in central_directory(url)]


def read_member(url: str, member: Member) -> bytes:
    """One member of a remote zip: its local header (30 bytes, name, extra), then its bytes."""
    buf = get(url, f"{member.offset}-{member.offset + 30 + 1024 + member.size - 1}")
    if buf[:4] != b"PK\x03\x04":
        raise ValueError(f"{member.name}: no local header at {member.offset}")
    n, m = struct.unpack_from("<HH", buf, 26)
    start = 30 + n + m
    if len(buf) < start + member.size:
        buf += get(url, f"{member.offset + len(buf)}-{member.offset + start + member.size - 1}")
    raw = buf[start : start + member.size]
    if member.method == 0:
        return raw
    if member.method == 8:
        return zlib.decompress(raw, -15)
    raise ValueError(f"{member.name}: compression method {member.method}")


def linux_wheel(files: list[dict]) -> dict | None:
    """The manylinux x86_64 wheel of a release that pip-wheels.json reads: py3-none first."""
    wheels = [
        f for f in files
        if not f.get("yanked") and f["filename"].endswith("x86_64.whl") and "manylinux" in f["filename"]
    ]
    wheels.sort(key=lambda f: ("-py3-none-" not in f["filename"], f["filename"]))
    return wheels[0] if wheels else None


def wheel_libraries(name: str, releases: list[str]) -> tuple[str, dict[str, list[str]]]:
    """Per release pip lists: the lib*.so* files of its manylinux x86_64 wheel."""
    api = PYPI.format(name)
    meta = json.loads(get(api))
    out: dict[str, list[str]] = {}
    for version in releases:
        wheel = linux_wheel(meta["releases"].get(version, []))
        if wheel is None:
            continue
        # The index may answer with URLs relative to the API's.
        members = central_directory_names(urllib.parse.urljoin(api, wheel["url"]))
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


def requires_dist(metadata: bytes) -> list[str]:
    """The Requires-Dist values of a METADATA file, as written (markers kept)."""
    headers = email.parser.BytesHeaderParser(policy=email.policy.compat32).parsebytes(metadata)
    return [v.strip() for v in headers.get_all("Requires-Dist", [])]


def wheel_requires(api: str, wheel: dict, name: str, version: str,
                   members: list[Member] | None = None) -> tuple[list[str], str]:
    """A wheel's Requires-Dist, and where they were read: "pep658" (the .metadata file beside the
    wheel), "wheel" (its *.dist-info/METADATA member, by range requests) or "json" (the release's
    info.requires_dist on PyPI's JSON API, where the wheel has no METADATA to read)."""
    url = urllib.parse.urljoin(api, wheel["url"])
    if wheel.get("core-metadata") or wheel.get("data-dist-info-metadata"):
        try:
            return requires_dist(get(url + ".metadata")), "pep658"
        except urllib.error.HTTPError as e:  # advertised but not served (mirrors, old uploads)
            if e.code != 404:
                raise
    metadata = [m for m in members or central_directory(url) if re.fullmatch(r"[^/]+\.dist-info/METADATA", m.name)]
    if len(metadata) == 1:
        return requires_dist(read_member(url, metadata[0])), "wheel"
    info = json.loads(get(PYPI_RELEASE.format(name, version)))["info"]
    return info.get("requires_dist") or [], "json"


def release_requires(task: tuple[str, str, dict]) -> tuple[str, str, list[str] | None, str | None]:
    name, version, meta = task
    wheel = linux_wheel(meta["releases"].get(version, []))
    if wheel is None:
        return name, version, None, None
    return name, version, *wheel_requires(PYPI.format(name), wheel, name, version)


def read_requires(found: dict[str, list[str]]) -> dict:
    """Per package and release of `found`: the Requires-Dist of the wheel pip-wheels.json reads."""
    with ThreadPoolExecutor(8) as ex:
        metas = dict(ex.map(lambda n: (n, json.loads(get(PYPI.format(n)))), sorted(found)))
        rows = list(ex.map(release_requires, [(n, v, metas[n]) for n in sorted(found) for v in found[n]]))
    packages: dict[str, dict[str, list[str]]] = {n: {} for n in sorted(found)}
    fallback: dict[str, list[str]] = {}
    read = Counter()
    for name, version, requires, how in rows:
        if requires is None:
            continue
        packages[name][version] = requires
        read[how] += 1
        if how == "json":
            fallback.setdefault(name, []).append(version)
    print("Requires-Dist read from: " + ", ".join(f"{k} {v}" for k, v in sorted(read.items())))
    return {"packages": packages, **({"fallback": fallback} if fallback else {})}


def write_requires(found: dict[str, list[str]]) -> None:
    data = read_requires(found)
    head = json.dumps({
        "source": "Requires-Dist of the manylinux x86_64 wheel (the one pip-wheels.json reads) of every release "
        "in pip-index.json, as its METADATA writes them: the .metadata file beside the wheel (PEP 658/714) where "
        "https://pypi.org/pypi/NAME/json advertises and serves it, else the wheel's *.dist-info/METADATA read "
        "with HTTP range requests; https://pypi.org/pypi/NAME/VERSION/json info.requires_dist only for the "
        "releases under \"fallback\". Releases without such a wheel are left out",
        "date": datetime.date.today().isoformat(),
    }, indent=1)[:-2]
    blocks = []
    for name, releases in data["packages"].items():
        # One release per line, so that a refresh reads as a diff.
        rows = ",\n".join(f"  {json.dumps(v)}: {json.dumps(r)}" for v, r in releases.items())
        blocks.append(f" {json.dumps(name)}: {{\n{rows}\n }}" if rows else f" {json.dumps(name)}: {{}}")
    tail = f',\n "fallback": {json.dumps(data["fallback"])}' if "fallback" in data else ""
    REQUIRES.write_text(head + ',\n "packages": {\n' + ",\n".join(blocks) + "\n }" + tail + "\n}\n")
    print(f"{sum(map(len, data['packages'].values()))} releases' Requires-Dist -> {REQUIRES}")


def check_requires(found: dict[str, list[str]]) -> bool:
    old, new = json.loads(REQUIRES.read_text()), read_requires(found)
    diff = False
    for name in sorted(set(old["packages"]) | set(new["packages"])):
        a, b = old["packages"].get(name, {}), new["packages"].get(name, {})
        for version in [*b, *(v for v in a if v not in b)]:
            if a.get(version) != b.get(version):
                print(f"{name} {version}: Requires-Dist {a.get(version)} -> {b.get(version)}")
                diff = True
    if old.get("fallback") != new.get("fallback"):
        print(f"fallback: {old.get('fallback')} -> {new.get('fallback')}")
        diff = True
    return diff


def provider_wheel(files: list[dict]) -> dict | None:
    """A release's manylinux x86_64 wheel for CPython or py3-none: py3-none first."""
    wheels = []
    for f in files:
        parts = f["filename"].removesuffix(".whl").split("-")
        if f.get("yanked") or not f["filename"].endswith(".whl") or len(parts) < 5:
            continue
        python, abi, platform = (t.split(".") for t in parts[-3:])
        if not any(p.startswith("manylinux") and p.endswith("_x86_64") for p in platform):
            continue
        if any(p.startswith("cp3") for p in python) or ("py3" in python and abi == ["none"]):
            wheels.append(f)
    wheels.sort(key=lambda f: ("-py3-none-" not in f["filename"], f["filename"]))
    return wheels[0] if wheels else None


def dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and (base := dotted(node.value)):
        return f"{base}.{node.attr}"
    return None


def load_code(source: str, module: str) -> dict:
    """What a load.py (or __init__.py) loads: library-name literals, other modules' load_library()."""
    try:
        nodes = sorted((n for n in ast.walk(ast.parse(source)) if hasattr(n, "lineno")),
                       key=lambda n: (n.lineno, n.col_offset))
    except SyntaxError:  # a newer Python's syntax: the literals alone, by pattern
        quoted = re.findall(r"[\"']([^\"'\n]*)[\"']", source)
        return {"function": "load_library" if re.search(r"^def load_library\b", source, re.M) else None,
                "names": list(dict.fromkeys(q for q in quoted if LIBRARY_NAME.fullmatch(q))),
                "calls": [], "pathfinder": []}
    function, names, calls, pathfinder = None, [], [], []
    for n in nodes:
        if isinstance(n, ast.FunctionDef) and n.name == "load_library" and n.col_offset == 0:
            function = n.name
        elif isinstance(n, ast.Constant) and isinstance(n.value, str) and LIBRARY_NAME.fullmatch(n.value):
            names.append(n.value)
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "load_library":
            base = dotted(n.func.value)
            if base and base != module and not base.startswith(module + "."):
                calls.append(base)
        elif (isinstance(n, ast.Call) and (dotted(n.func) or "").endswith("load_nvidia_dynamic_lib") and n.args
              and isinstance(n.args[0], ast.Constant)):
            pathfinder.append(n.args[0].value)
    return {"function": function, "names": list(dict.fromkeys(names)), "calls": list(dict.fromkeys(calls)),
            "pathfinder": list(dict.fromkeys(pathfinder))}


def provider_release(task: tuple[str, str, dict]) -> tuple[str, str, str, dict]:
    """One release of a provider: its module, libraries, Requires-Dist and load code."""
    name, version, wheel = task
    api = PYPI.format(name)
    url = urllib.parse.urljoin(api, wheel["url"])
    members = central_directory(url)
    by_name = {m.name: m for m in members}
    modules = sorted({m.name.split("/")[0] for m in members if re.fullmatch(r"[^/]+/__init__\.py", m.name)})
    guess = re.sub(r"-cu[0-9]+$", "", name).replace("-", "_")
    module = guess if guess in modules else modules[0]
    if len(modules) != 1:
        print(f"{name} {version}: modules {modules}, taking {module}", file=sys.stderr)
    entry: dict = {
        "libraries": sorted(m.name for m in members if re.fullmatch(r"[^/]+\.so(\.[^/]*)?", m.name.rsplit("/", 1)[-1])),
        "requires_dist": wheel_requires(api, wheel, name, version, members)[0],
    }
    for path in (f"{module}/load.py", f"{module}/__init__.py"):
        if path in by_name:
            code = load_code(read_member(url, by_name[path]).decode("utf-8", "replace"), module)
            if path.endswith("load.py") or code["function"]:
                if not code["pathfinder"]:
                    del code["pathfinder"]
                entry["load"] = {"file": path, **code}
                break
    return name, version, module, entry


def read_providers() -> dict:
    def project(name: str) -> tuple[str, dict | None]:
        try:
            return name, json.loads(get(PYPI.format(name)))
        except urllib.error.HTTPError as e:
            if e.code == 404:
                return name, None
            raise

    with ThreadPoolExecutor(8) as ex:
        metas = dict(ex.map(project, PROVIDERS))
        tasks = []
        for name, meta in sorted((n, m) for n, m in metas.items() if m):
            releases = []
            for version, files in meta["releases"].items():
                try:
                    v = Version(version)
                except InvalidVersion:
                    continue
                if not v.is_prerelease and (wheel := provider_wheel(files)):
                    releases.append((v, version, wheel))
            if not releases:
                print(f"{name}: no final release with a manylinux x86_64 wheel", file=sys.stderr)
            releases.sort(key=lambda r: r[0], reverse=True)
            tasks += [(name, version, wheel) for _, version, wheel in releases[:PROVIDER_RELEASES]]
        rows = list(ex.map(provider_release, tasks))
    packages: dict[str, dict] = {}
    for name, version, module, entry in rows:
        package = packages.setdefault(name, {"module": module, "releases": {}})
        if module != package["module"]:
            print(f"{name} {version}: module {module}, newer releases {package['module']}", file=sys.stderr)
        package["releases"][version] = entry
    return {
        "packages": packages,
        "absent": sorted(n for n, m in metas.items() if m is None),
        "without_wheels": sorted(n for n, m in metas.items() if m and n not in packages),
    }


def write_providers() -> None:
    data = read_providers()
    head = json.dumps({
        "source": "https://pypi.org/pypi/NAME/json: the newest 4 final releases (PEP 440) of each package with a "
        "manylinux x86_64 wheel for CPython or py3-none (py3-none preferred). Per wheel, read with HTTP range "
        "requests: the zip central directory (libraries: every *.so / *.so.* member), METADATA (requires_dist: its "
        "Requires-Dist, from the PEP 658 .metadata file where served), and MODULE/load.py, else an __init__.py "
        "that defines load_library (load: names = string literals matching lib*.so[.N], calls = X.load_library() "
        "of other modules, pathfinder = cuda.pathfinder load_nvidia_dynamic_lib() arguments). absent: candidate "
        "names PyPI does not know; without_wheels: candidates PyPI knows with no such release (placeholder sdists "
        "only)",
        "date": datetime.date.today().isoformat(),
    }, indent=1)[:-2]
    blocks = []
    for name, package in sorted(data["packages"].items()):
        releases = ",\n".join(
            f"   {json.dumps(v)}: {{\n" + ",\n".join(f"    {json.dumps(k)}: {json.dumps(x)}" for k, x in e.items()) + "\n   }"
            for v, e in package["releases"].items()
        )
        blocks.append(f' {json.dumps(name)}: {{\n  "module": {json.dumps(package["module"])},\n  "releases": {{\n{releases}\n  }}\n }}')
    PROVIDER_WHEELS.write_text(
        head + ',\n "packages": {\n' + ",\n".join(blocks) + f'\n }},\n "absent": {json.dumps(data["absent"])},\n'
        f' "without_wheels": {json.dumps(data["without_wheels"])}\n}}\n'
    )
    print(f"{len(data['packages'])} packages, {sum(len(p['releases']) for p in data['packages'].values())} releases "
          f"-> {PROVIDER_WHEELS}; not on PyPI: {', '.join(data['absent']) or '-'}; "
          f"no manylinux x86_64 wheel: {', '.join(data['without_wheels']) or '-'}")


def check_providers() -> bool:
    old, new = json.loads(PROVIDER_WHEELS.read_text()), read_providers()
    diff = False
    for name in sorted(set(old["packages"]) | set(new["packages"])):
        a, b = old["packages"].get(name, {}), new["packages"].get(name, {})
        if a.get("module") != b.get("module"):
            print(f"{name}: module {a.get('module')} -> {b.get('module')}")
            diff = True
        ra, rb = a.get("releases", {}), b.get("releases", {})
        for version in [*rb, *(v for v in ra if v not in rb)]:
            if ra.get(version) != rb.get(version):
                what = "new" if version not in ra else "no longer among the newest" if version not in rb else "changed"
                print(f"{name} {version}: {what}")
                diff = True
    for key in ("absent", "without_wheels"):
        if old[key] != new[key]:
            print(f"{key}: {old[key]} -> {new[key]}")
            diff = True
    return diff


def index(check: bool) -> int:
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


TARGETS = ("index", "requires", "providers")


def main() -> int:
    args = sys.argv[1:]
    check = args[:1] == ["--check"]
    targets = args[check:] or list(TARGETS)
    if not set(targets) <= set(TARGETS) or len(set(targets)) != len(targets):
        print(__doc__, file=sys.stderr)
        return 2
    rc = index(check) if "index" in targets else 0
    if rc and not check:
        return rc
    # The releases pip-index.json lists as it stands (just rewritten when `index` ran).
    found = json.loads(SNAPSHOT.read_text())["packages"]
    if check:
        if "requires" in targets:
            rc |= check_requires(found)
        if "providers" in targets:
            rc |= check_providers()
        return int(rc)
    if "requires" in targets:
        write_requires(found)
    if "providers" in targets:
        write_providers()
    return 0


if __name__ == "__main__":
    sys.exit(main())
