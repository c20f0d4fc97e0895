"""cudist's Python package: only a way to find and run the cudist binary installed with it.

Everything cudist does is in the binary (``cudist --help``). This module finds it the way pip
installed it, in the scripts directory of the environment, of the user scheme, or next to a
``pip install --target`` tree, so that ``python -m cudist ARGS`` and tools written in Python can
run it without relying on PATH.
"""

from __future__ import annotations

import os
import sys
import sysconfig

__all__ = ["find_cudist_bin"]


def _candidates():
    exe = "cudist" + (sysconfig.get_config_var("EXE") or "")
    # The environment this package is installed in (a venv, the system, a conda env).
    yield os.path.join(sysconfig.get_path("scripts"), exe)
    # `pip install --user`: the user scheme's scripts directory.
    scheme = {"posix": "posix_user", "nt": "nt_user"}.get(os.name)
    if sys.platform == "darwin" and sys._framework:  # pragma: no cover - not a cudist platform
        scheme = "osx_framework_user"
    if scheme is not None:
        try:
            yield os.path.join(sysconfig.get_path("scripts", scheme=scheme), exe)
        except KeyError:
            pass
    # `pip install --target DIR`: the package is DIR/cudist, the binary DIR/bin/cudist.
    here = os.path.dirname(os.path.abspath(__file__))
    yield os.path.join(os.path.dirname(here), "bin", exe)


def find_cudist_bin() -> str:
    """The path of the cudist binary installed with this package.

    Raises FileNotFoundError, naming every place looked at, when none holds an executable one.
    """
    looked = []
    for path in _candidates():
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
        looked.append(path)
    raise FileNotFoundError(
        "the cudist binary is not installed next to this package; looked at: " + ", ".join(looked)
    )
