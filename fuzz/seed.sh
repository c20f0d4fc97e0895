#!/usr/bin/env bash
# Seeds the fuzz corpora from the device-code fixtures.
#   fuzz/corpus/fatbin/     raw bytes of every .nv_fatbin and __nv_relfatbin section
#   fuzz/corpus/elf/        the fixture files themselves
#   fuzz/corpus/elf_patch/  the fixture shared libraries, and a gcc-built one with a RUNPATH
#   fuzz/corpus/wheel/      small wheels (Python's zipfile): pure, with an ELF member, zip64
#   fuzz/corpus/conda/      small packages: the first byte picks .conda (0) or .tar.bz2 (1)
#   fuzz/corpus/python/     a package's Python, its files split at NUL: the loader shapes of
#                           crates/cudist-analysis/src/loads.rs's tests
# Needs objcopy (binutils). Safe to re-run: existing seeds are overwritten.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
fixtures="$here/../tests/fixtures/device"
fat="$here/corpus/fatbin"
elf="$here/corpus/elf"
mkdir -p "$fat" "$elf"

for f in "$fixtures"/*; do
    [ -f "$f" ] || continue
    # Only ELF files: skip the listings, scripts and notes beside them.
    [ "$(head -c 4 "$f" | od -An -tx1 | tr -d ' \n')" = "7f454c46" ] || continue
    name="$(basename "$f")"
    cp "$f" "$elf/$name"
    for section in .nv_fatbin __nv_relfatbin; do
        out="$fat/$name@${section#.}"
        # objcopy writes an empty file when the section is absent; drop those.
        if objcopy -O binary --only-section="$section" "$f" "$out" 2>/dev/null && [ -s "$out" ]; then
            :
        else
            rm -f "$out"
        fi
    done
done

patch="$here/corpus/elf_patch"
mkdir -p "$patch"
cp "$fixtures"/*.so "$patch/"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
echo 'int f(void) { return 1; }' > "$tmp/f.c"
gcc -shared -fPIC -Wl,-soname,libf.so.1 -Wl,-rpath,'$ORIGIN/lib' -o "$patch/libf-runpath.so" "$tmp/f.c"

python3 - "$here/corpus" "$fixtures/multi.so" <<'PY'
import base64, bz2, hashlib, io, json, os, sys, tarfile, zipfile
out, so_path = sys.argv[1], sys.argv[2]
so = open(so_path, 'rb').read()
os.makedirs(out + '/wheel', exist_ok=True)
os.makedirs(out + '/conda', exist_ok=True)
def h(b):
    return 'sha256=' + base64.urlsafe_b64encode(hashlib.sha256(b).digest()).rstrip(b'=').decode()
def wheel(name, members, **kw):
    buf = io.BytesIO()
    z = zipfile.ZipFile(buf, 'w', zipfile.ZIP_DEFLATED)
    rows = []
    for n, d in members:
        z.writestr(n, d, **kw)
        rows.append('%s,%s,%d' % (n, h(d), len(d)))
    di = 'w-1.0.dist-info/'
    for n, d in (('METADATA', b'Metadata-Version: 2.1\nName: w\nVersion: 1.0\nRequires-Dist: numpy\n'),
                 ('WHEEL', b'Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: cp311-cp311-linux_x86_64\n')):
        z.writestr(di + n, d)
        rows.append('%s,%s,%d' % (di + n, h(d), len(d)))
    z.writestr(di + 'RECORD', '\n'.join(rows + [di + 'RECORD,,']) + '\n')
    z.close()
    open(out + '/wheel/' + name, 'wb').write(buf.getvalue())
wheel('pure', [('w/__init__.py', b'print(1)\n')])
wheel('elf', [('w/_ext.so', so), ('w/a,b.txt', b'x')])
wheel('stored', [('w/_ext.so', so)], compress_type=zipfile.ZIP_STORED)
def conda():
    buf = io.BytesIO()
    t = tarfile.open(fileobj=buf, mode='w:bz2')
    def add(name, data):
        i = tarfile.TarInfo(name); i.size = len(data); t.addfile(i, io.BytesIO(data))
    add('info/index.json', json.dumps({'name': 'w', 'version': '1.0', 'build': 'h0_0', 'build_number': 0, 'depends': ['cuda-cudart >=12'], 'subdir': 'linux-64'}).encode())
    add('info/paths.json', json.dumps({'paths': [], 'paths_version': 1}).encode())
    add('lib/libw.so', so)
    i = tarfile.TarInfo('lib/libw.so.1'); i.type = tarfile.SYMTYPE; i.linkname = 'libw.so'; t.addfile(i)
    t.close()
    open(out + '/conda/tarbz2', 'wb').write(b'\x01' + buf.getvalue())
conda()
PY
# A .conda: a stored zip of info-*.tar.zst and pkg-*.tar.zst (zstd from Debian's zstd, when
# present).
if command -v zstd >/dev/null 2>&1; then
    mkdir -p "$tmp/c/info" "$tmp/c/lib"
    echo '{"name": "w", "version": "1.0", "build": "h0_0", "build_number": 0, "depends": [], "subdir": "linux-64"}' > "$tmp/c/info/index.json"
    cp "$fixtures/multi.so" "$tmp/c/lib/libw.so"
    tar -C "$tmp/c" -cf - info | zstd -q -o "$tmp/info-w-1.0-h0_0.tar.zst"
    tar -C "$tmp/c" -cf - lib | zstd -q -o "$tmp/pkg-w-1.0-h0_0.tar.zst"
    python3 - "$tmp" "$here/corpus/conda/conda" <<'PY'
import sys, zipfile, io
d, out = sys.argv[1], sys.argv[2]
buf = io.BytesIO()
z = zipfile.ZipFile(buf, 'w', zipfile.ZIP_STORED)
z.writestr('metadata.json', '{"conda_pkg_format_version": 2}')
for part in ('info', 'pkg'):
    z.write('%s/%s-w-1.0-h0_0.tar.zst' % (d, part), '%s-w-1.0-h0_0.tar.zst' % part)
z.close()
open(out, 'wb').write(b'\x00' + buf.getvalue())
PY
fi

echo "seeded $(ls "$fat" | wc -l) fatbin section(s) into $fat"
echo "seeded $(ls "$elf" | wc -l) ELF file(s) into $elf"
for t in elf_patch wheel conda; do
    echo "seeded $(ls "$here/corpus/$t" | wc -l) input(s) into $here/corpus/$t"
done

py="$here/corpus/python"
mkdir -p "$py"
printf 'import ctypes, sys\nif sys.platform == "win32":\n    ctypes.CDLL("x.dll")\ntry:\n    ctypes.CDLL("libcudart.so.12")\nexcept OSError:\n    pass\nfrom .m1 import *\n\0def _load(lib):\n    from cuda.pathfinder import load_nvidia_dynamic_lib as _l\n    return _l(lib)\n_load("cublas")\n' > "$py/loaders"
printf 'import os\nis_win = os.name == "nt"\nif not is_win and os.getenv("X", "0") == "1":\n    f = lambda: g(f"libz.so.{v}")\n\0import pkg.m2 as m\nm.h()\n\0def h():\n    import libx\n    libx.load_library()\n' > "$py/branches"

echo "seeded $(ls "$py" | wc -l) input(s) into $py"

# What an index sends: pages (first byte 0) and range answers for a small wheel (first byte 1:
# one answer, the whole file, as the opening request for the last 64 KiB gets it; and the same
# split into a tail and a front, as a larger wheel is read).
python3 - "$here/corpus/index" "$here/corpus/wheel/pure" <<'PY'
import json, os, sys
out, wheel = sys.argv[1], open(sys.argv[2], 'rb').read()
os.makedirs(out, exist_ok=True)
page = {"meta": {"api-version": "1.1"}, "name": "demo", "files": [
    {"filename": "demo-1.0-py3-none-any.whl", "url": "../../files/demo-1.0-py3-none-any.whl",
     "hashes": {"sha256": "00" * 32}, "size": 1234, "requires-python": ">=3.9", "yanked": False},
    {"filename": "demo-1.0.tar.gz", "url": "https://x.invalid/demo-1.0.tar.gz", "hashes": {},
     "yanked": "broken"}]}
open(out + '/json', 'wb').write(b'\x00' + json.dumps(page).encode())
html = ('<html><body><a href="../../files/demo-1.0-py3-none-any.whl#sha256=' + '00' * 32 +
        '" data-requires-python="&gt;=3.9">demo-1.0-py3-none-any.whl</a>'
        '<a href="demo-1.0-cp311-cp311-manylinux_2_28_x86_64.whl" data-yanked="">x</a></body></html>')
open(out + '/html', 'wb').write(b'\x00' + html.encode())
def answer(header, body):
    h = header.encode()
    return bytes([len(h)]) + h + len(body).to_bytes(3, 'little') + body
n = len(wheel)
open(out + '/range-whole', 'wb').write(b'\x01' + answer('bytes 0-%d/%d' % (n - 1, n), wheel))
cut = n // 2
open(out + '/range-split', 'wb').write(
    b'\x01' + answer('bytes %d-%d/%d' % (cut, n - 1, n), wheel[cut:])
    + answer('bytes 0-%d/%d' % (cut - 1, n), wheel[:cut]))
PY
echo "seeded $(ls "$here/corpus/index" | wc -l) input(s) into $here/corpus/index"
