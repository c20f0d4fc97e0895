#!/usr/bin/env python3
"""Writes glibc-symbols.json: for x86_64 and aarch64, the first glibc release that defines each
symbol of its libraries (libc, libm, libpthread, libdl, librt, libresolv, libutil, libanl and the
dynamic loader) that the architecture's first manylinux policy's glibc lacks.

A file that imports such a symbol *without* a symbol version (linked against a C library whose
version definitions were left out, or by a linker that drops them) carries no `GLIBC_2.38` in its
version-requirement table, so neither its platform tag nor auditwheel sees the need; the loader
still refuses it on an older glibc ("undefined symbol: __isoc23_strtoll" on glibc 2.36). cudist
reads the symbol here to know the release the file needs.

Source: glibc's ABI lists, the files `sysdeps/unix/sysv/linux/<arch>/*.abilist` of its source
(https://sourceware.org/git/glibc.git), whose lines are `GLIBC_<version> <symbol> <kind>`, one per
version a symbol is defined at. A symbol's first release is the oldest version it has in any of
the libraries (pthread_create is in libc since 2.34 but in libpthread since 2.2.5: an unversioned
reference to it loads on any glibc). GLIBC_PRIVATE symbols are left out. Run with a glibc source
tree (a checkout, or the two directories extracted from one):

    python3 crates/cudist-catalog/data/gen-glibc-symbols.py GLIBC_SOURCE_DIR
"""
import datetime
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
# The glibc of each architecture's first manylinux policy (manylinux1 on x86_64, manylinux2014
# on aarch64; manylinux.toml): symbols that old are in every glibc a wheel can be tagged for.
ARCHES = {
    "x86_64": ("sysdeps/unix/sysv/linux/x86_64/64", (2, 5)),
    "aarch64": ("sysdeps/unix/sysv/linux/aarch64", (2, 17)),
}
LIBRARIES = ["libc", "libm", "libpthread", "libdl", "librt", "libresolv", "libutil", "libanl", "ld"]
LINE = re.compile(r"^GLIBC_(\d+)\.(\d+)(?:\.(\d+))? (\S+) ")


def main():
    src = sys.argv[1]
    version = "?"
    with open(os.path.join(src, "version.h")) as f:
        for line in f:
            if line.startswith("#define VERSION"):
                version = line.split('"')[1]
    out = {
        "source": "glibc's ABI lists (sysdeps/unix/sysv/linux/<arch>/*.abilist) of its source at "
        f"version {version}, https://sourceware.org/git/glibc.git, read by gen-glibc-symbols.py on "
        f"{datetime.date.today().isoformat()}",
        "arches": {},
    }
    for arch, (directory, floor) in ARCHES.items():
        first = {}
        for lib in LIBRARIES:
            path = os.path.join(src, directory, f"{lib}.abilist")
            if not os.path.exists(path):
                continue
            with open(path) as f:
                for line in f:
                    m = LINE.match(line)
                    if not m:
                        continue
                    key = (int(m.group(1)), int(m.group(2)))
                    name = m.group(4)
                    if name not in first or key < first[name]:
                        first[name] = key
        newer = {n: f"{k[0]}.{k[1]}" for n, k in sorted(first.items()) if k > floor}
        out["arches"][arch] = {
            "baseline": f"{floor[0]}.{floor[1]}",
            "symbols_read": len(first),
            "since": newer,
        }
    with open(os.path.join(HERE, "glibc-symbols.json"), "w") as f:
        json.dump(out, f, indent=1, sort_keys=False)
        f.write("\n")


if __name__ == "__main__":
    main()
