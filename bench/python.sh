#!/usr/bin/env bash
# bench/python.sh — what reading a package's Python costs (`crates/cudist-analysis/src/pysource.rs`,
# ruff's parser since issue 34; issue 37 wants it to cost nothing measurable).
#
# Measures, in one run so that the ratios compare like with like:
#   1. `cudist inspect WHEEL` on cupy-cuda12x 14.2.0 (cp311, 137 MB, ~600 `.py` files read for
#      the libraries they load) against `auditwheel show WHEEL`, the anchor of bench/run.sh.
#   2. The reading alone: `cudist inspect DIR` on a copy of this machine's CPython standard library
#      (its `.py` files only: nothing but Python to read), and the same files read by CPython's
#      own parser (`python3 -c 'ast.parse(…)'` over them) as the floor of a real parse.
#   With CUDIST_OLD set to another build, both cudist rows are timed with it too (before/after).
# Wall times: 1 warm-up + $RUNS runs (median and min); peak RSS of one extra run.
# Usage: bench/python.sh [--append]   (--append adds the section to BENCHMARKS.md)
# Environment: CUDIST_CACHE (default <repo>/.cache), CUDIST_BIN (skip the build), CUDIST_OLD,
# RUNS (default 5).
set -euo pipefail
shopt -s inherit_errexit

AUDITWHEEL_PIN=6.8.2
WHEEL_SPEC=cupy-cuda12x==14.2.0
WHEEL_NAME=cupy_cuda12x-14.2.0-cp311-cp311-manylinux2014_x86_64.whl
RUNS=${RUNS:-5}

APPEND=0
case "${1:-}" in --append) APPEND=1 ;; "") ;; *) echo "usage: $0 [--append]" >&2; exit 2 ;; esac
REPO=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${CUDIST_CACHE:-$REPO/.cache}
WORK=$CACHE/bench-python
VENV=$CACHE/bench/venv-python
mkdir -p "$WORK" "$CACHE/wheels"
# shellcheck source=bench/lib.sh
source "$REPO/bench/lib.sh"

tool_venv "$VENV" "auditwheel==$AUDITWHEEL_PIN"
WHEEL=$CACHE/wheels/$WHEEL_NAME
cached_wheel "$WHEEL_SPEC" "$WHEEL"
# The standard library's .py files, copied once (a tree of nothing but Python).
STDLIB=$WORK/stdlib
if [[ ! -d $STDLIB ]]; then
  SRC=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["stdlib"])')
  log "copying the .py files of $SRC"
  python3 - "$SRC" "$STDLIB" <<'PY'
import pathlib, shutil, sys
src, dst = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
for p in src.rglob("*.py"):
    rel = p.relative_to(src)
    if {"site-packages", "dist-packages"} & set(rel.parts) or p.stat().st_size > 1 << 20:
        continue
    (dst / rel).parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(p, dst / rel)
PY
fi
PY_FILES=$(find "$STDLIB" -name '*.py' | wc -l)
PY_MB=$(du -sm --apparent-size "$STDLIB" | cut -f1)

use_cudist
machine_facts
# inspect exits 1 when its verdict is a finding; only >1 is a failure here.
ok() { "$@"; local rc=$?; [[ $rc -le 1 ]]; }
export -f ok
run() { timeit_runs bash -c 'ok "$@"' _ "$@"; }
FLOOR=(python3 -c 'import ast, pathlib, sys
for p in pathlib.Path(sys.argv[1]).rglob("*.py"):
    ast.parse(p.read_bytes())' "$STDLIB")

log "timing ($RUNS runs each)"
read -r W_MED W_MIN <<< "$(run "$CUDIST" inspect "$WHEEL")"
read -r A_MED A_MIN <<< "$(run "$VENV/bin/auditwheel" show "$WHEEL")"
read -r S_MED S_MIN <<< "$(run "$CUDIST" inspect "$STDLIB")"
read -r F_MED F_MIN <<< "$(run "${FLOOR[@]}")"
W_RSS=$(peak_rss "$CUDIST" inspect "$WHEEL"); S_RSS=$(peak_rss "$CUDIST" inspect "$STDLIB")
OLD_ROWS=""
if [[ -n "${CUDIST_OLD:-}" ]]; then
  cp "$CUDIST_OLD" "$WORK/cudist-old"
  read -r OW_MED OW_MIN <<< "$(run "$WORK/cudist-old" inspect "$WHEEL")"
  read -r OS_MED OS_MIN <<< "$(run "$WORK/cudist-old" inspect "$STDLIB")"
  OW_RSS=$(peak_rss "$WORK/cudist-old" inspect "$WHEEL"); OS_RSS=$(peak_rss "$WORK/cudist-old" inspect "$STDLIB")
  OLD_ROWS="| \`cudist inspect WHEEL\`, CUDIST_OLD | $OW_MED s | $OW_MIN s | $OW_RSS MiB |
| \`cudist inspect STDLIB\`, CUDIST_OLD | $OS_MED s | $OS_MIN s | $OS_RSS MiB |"
fi
ratio() { python3 -c "import sys; print('%.3f' % (float(sys.argv[1]) / float(sys.argv[2])))" "$1" "$2"; }

COMMIT=$(cd "$REPO" && git rev-parse --short HEAD)$(cd "$REPO" && git diff --quiet || echo +dirty)
SECTION="## $(date -u '+%Y-%m-%d %H:%M UTC') — reading a package's Python, cudist $COMMIT

Machine: $CPU, $(nproc) cores, $RAM; $TIMER; $RUNS runs after a warm-up. cudist: $BUILT.
WHEEL: $WHEEL_NAME. STDLIB: the $PY_FILES \`.py\` files ($PY_MB MB) of this machine's CPython
standard library.

| Command | Median | Min | Peak RSS |
|---|---:|---:|---:|
| \`cudist inspect WHEEL\` | $W_MED s | $W_MIN s | $W_RSS MiB |
| \`auditwheel show WHEEL\` | $A_MED s | $A_MIN s | |
| \`cudist inspect STDLIB\` | $S_MED s | $S_MIN s | $S_RSS MiB |
| CPython's \`ast.parse\` of STDLIB (one process) | $F_MED s | $F_MIN s | |
$OLD_ROWS

| Ratio (medians) | Value |
|---|---:|
| inspect WHEEL / \`auditwheel show\` | $(ratio "$W_MED" "$A_MED") |
| inspect STDLIB / CPython's \`ast.parse\` | $(ratio "$S_MED" "$F_MED") |
"
echo "$SECTION"
if [[ $APPEND == 1 ]]; then
  printf '\n%s' "$SECTION" >> "$REPO/BENCHMARKS.md"
  log "appended to BENCHMARKS.md"
fi
