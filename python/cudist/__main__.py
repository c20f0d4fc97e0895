"""``python -m cudist ARGS``: run the installed cudist binary with ARGS, with its exit code."""

from __future__ import annotations

import os
import sys

from cudist import find_cudist_bin


def main() -> "int | None":
    binary = find_cudist_bin()
    args = [binary, *sys.argv[1:]]
    if sys.platform == "win32":  # pragma: no cover - cudist is built for Linux
        import subprocess

        return subprocess.call(args)
    # Replace this process, so signals, the exit code and stdin reach cudist unchanged.
    os.execv(binary, args)
    return None


if __name__ == "__main__":
    sys.exit(main())
