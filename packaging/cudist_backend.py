"""The PEP 517 backend that builds cudist's wheel: maturin, with manylinux2014 as the default.

maturin's own PEP 517 hook builds with ``--compatibility off`` unless told otherwise, which makes
a ``linux_x86_64`` wheel linked against this machine's glibc. cudist's wheel must run wherever
manylinux2014 runs, so ``pip wheel .`` and ``pip install .`` build with zig (from the ``ziglang``
build requirement) against glibc 2.17 and tag the wheel ``manylinux_2_17``, exactly as
``maturin build --release --zig --compatibility manylinux2014`` does.

Arguments given by the builder win: ``MATURIN_PEP517_ARGS`` or the ``maturin.build-args`` config
setting (``pip wheel . -C maturin.build-args="--compatibility off"``) replace these defaults.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Mapping

import maturin
from maturin import (  # noqa: F401 - the hooks this backend passes through unchanged
    build_sdist,
    get_requires_for_build_sdist,
    get_requires_for_build_wheel,
    prepare_metadata_for_build_wheel,
)

DEFAULT_BUILD_ARGS = ["--zig", "--compatibility", "manylinux2014"]


def _with_defaults(config_settings: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    given = config_settings or {}
    if os.environ.get("MATURIN_PEP517_ARGS") is not None:
        return config_settings
    if "maturin.build-args" in given or "build-args" in given:
        return config_settings
    # zig comes from the ziglang wheel in this build environment: have maturin's zig finder run
    # `python -m ziglang` with this interpreter, not whichever `python3` PATH holds first.
    os.environ.setdefault("CARGO_ZIGBUILD_PYTHON_PATH", sys.executable)
    return {**given, "maturin.build-args": DEFAULT_BUILD_ARGS}


def build_wheel(
    wheel_directory: str,
    config_settings: Mapping[str, Any] | None = None,
    metadata_directory: str | None = None,
) -> str:
    return maturin.build_wheel(wheel_directory, _with_defaults(config_settings), metadata_directory)
