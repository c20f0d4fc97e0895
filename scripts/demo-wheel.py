#!/usr/bin/env python3
"""Build the demo wheel the README's `cudist repair` example repairs: one CUDA extension module,
tests/fixtures/device/multi.so (built by real nvcc, tests/fixtures/device/build.sh), packed as
`demo_cuda/_multi.cpython-311-x86_64-linux-gnu.so` in a plain `linux_x86_64` wheel, the way a
build backend leaves it: it needs libcudart.so.13 but declares no CUDA dependency and has no RPATH.

    python3 scripts/demo-wheel.py DIR     # writes DIR/demo_cuda-1.0-cp311-cp311-linux_x86_64.whl

The wheel is byte-for-byte the same on every run (fixed timestamps, sorted members).
"""
import base64
import hashlib
import os
import sys
import tempfile
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
NAME = "demo_cuda-1.0-cp311-cp311-linux_x86_64.whl"


def record_line(path: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def main() -> int:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "dist")
    out.mkdir(parents=True, exist_ok=True)
    members = {
        "demo_cuda/__init__.py": b"from . import _multi  # noqa: F401\n",
        "demo_cuda/_multi.cpython-311-x86_64-linux-gnu.so": (
            REPO / "tests/fixtures/device/multi.so"
        ).read_bytes(),
        "demo_cuda-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: demo-cuda\nVersion: 1.0\n",
        "demo_cuda-1.0.dist-info/WHEEL": (
            b"Wheel-Version: 1.0\nGenerator: cudist scripts/demo-wheel.py\n"
            b"Root-Is-Purelib: false\nTag: cp311-cp311-linux_x86_64\n"
        ),
    }
    record = "".join(record_line(p, d) + "\n" for p, d in sorted(members.items()))
    record += "demo_cuda-1.0.dist-info/RECORD,,\n"
    members["demo_cuda-1.0.dist-info/RECORD"] = record.encode()
    path = out / NAME
    # An exclusive temporary beside the wheel, renamed into place when complete, removed if not.
    fd, tmp = tempfile.mkstemp(dir=out, prefix=f".{NAME}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f, zipfile.ZipFile(f, "w", zipfile.ZIP_DEFLATED) as z:
            for name in sorted(members, key=lambda n: (n.startswith("demo_cuda-1.0.dist-info"), n)):
                info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
                info.compress_type = zipfile.ZIP_DEFLATED
                info.external_attr = (0o755 if name.endswith(".so") else 0o644) << 16
                z.writestr(info, members[name])
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
