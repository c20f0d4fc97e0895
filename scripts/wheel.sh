#!/usr/bin/env bash
# cudist's wheel, built and used as a user would (issue 12):
#   1. `pip wheel .` (PEP 517: packaging/cudist_backend.py runs maturin with zig from the ziglang
#      wheel, for glibc 2.17, tagged manylinux2014) into $CUDIST_CACHE/dist;
#   2. README.md's first command, verbatim, in a fresh virtual environment (it installs cudist
#      with `pip install .` and runs the installed `cudist`, not `cargo run`);
#   3. `python -m cudist --version` there.
# Prints the wheel's path as its last line; .ci/run hands it to the tests as CUDIST_WHEEL
# (tests/own_wheel.rs checks the wheel with `cudist inspect` and `auditwheel show`, its metadata,
# and installs; tests/toolkit.rs runs the cibuildwheel recipe of docs/recipes.md with it).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${CUDIST_CACHE:-$ROOT/.cache}"
log() { printf '[wheel.sh] %s\n' "$*" >&2; }

DIST="$CACHE/dist"
BUILDER="$CACHE/wheel-builder"
rm -rf "$DIST"
mkdir -p "$DIST"
if [[ ! -x "$BUILDER/bin/pip" ]]; then
    python3 -m venv "$BUILDER"
fi
log "pip wheel . (maturin + zig, manylinux2014)"
start=$(date +%s)
"$BUILDER/bin/pip" wheel --quiet --disable-pip-version-check --no-deps -w "$DIST" "$ROOT" >&2
log "built in $(( $(date +%s) - start )) s: $(ls "$DIST")"
WHEEL="$(ls "$DIST"/cudist-*.whl)"

# README.md's first command: the first line of its first ```sh block, without its comment.
FIRST="$(awk '/^```sh$/ { inblock = 1; next } inblock { print; exit }' "$ROOT/README.md" | sed 's/[[:space:]]*#.*$//')"
[[ "$FIRST" == *"cudist "* ]] || { log "README.md's first command runs no cudist: $FIRST"; exit 1; }
VENV="$(mktemp -d)/venv"
trap 'rm -rf "$(dirname "$VENV")"' EXIT
python3 -m venv "$VENV"
log "in a fresh venv: $FIRST"
(
    cd "$ROOT"
    # shellcheck disable=SC1091
    source "$VENV/bin/activate"
    export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_QUIET=1
    start=$(date +%s)
    bash -euo pipefail -c "$FIRST" > "$CACHE/readme-first-command.out"
    [[ "$(command -v cudist)" == "$VENV/bin/cudist" ]] || { log "cudist is not the venv's"; exit 1; }
    grep -q '^Verdict' "$CACHE/readme-first-command.out" || { log "no report from: $FIRST"; exit 1; }
    log "README's first command: ok in $(( $(date +%s) - start )) s ($(wc -l < "$CACHE/readme-first-command.out") lines)"
    python -m cudist --version >&2
)
echo "$WHEEL"
