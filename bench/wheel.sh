#!/usr/bin/env bash
# bench/wheel.sh — cudist's own wheel (issue 12): its size, how long `pip install` of it takes
# into a fresh venv, and how long cudist takes to start, each against ruff's wheel (the same
# kind: a py3-none-manylinux_2_17 wheel holding one Rust binary, installed from a local file).
#
# Measures, in one run:
#   1. wheel size (compressed) and the binary's size, cudist and ruff==0.17.6;
#   2. `pip install --no-index --no-deps WHEEL` into a fresh venv (hyperfine --prepare makes the
#      venv anew for every run, untimed), cudist vs ruff;
#   3. start-up: `cudist --version` (parses the built-in catalog) vs `ruff --version`, and
#      `python -m cudist --version` (the Python shim that finds and execs the binary).
# Usage: bench/wheel.sh [--append]   (--append adds the section to BENCHMARKS.md)
# Environment: CUDIST_WHEEL (a built wheel; else scripts/wheel.sh builds one), CUDIST_CACHE
# (default <repo>/.cache), RUNS (default 10). Needs hyperfine.
set -euo pipefail
shopt -s inherit_errexit

RUNS=${RUNS:-10}
APPEND=0
case "${1:-}" in --append) APPEND=1 ;; "") ;; *) echo "usage: $0 [--append]" >&2; exit 2 ;; esac
REPO=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${CUDIST_CACHE:-$REPO/.cache}
WORK=$CACHE/bench-wheel
mkdir -p "$WORK"
# shellcheck source=bench/lib.sh
source "$REPO/bench/lib.sh"
command -v hyperfine > /dev/null || { echo "bench/wheel.sh needs hyperfine (apt-get install hyperfine)" >&2; exit 1; }

if [[ -z "${CUDIST_WHEEL:-}" ]]; then
  CUDIST_WHEEL=$(bash "$REPO/scripts/wheel.sh" | tail -1)
fi
RUFF_PIN=ruff==0.17.6
if ! ls "$WORK"/ruff-0.17.6-*.whl > /dev/null 2>&1; then
  log "downloading $RUFF_PIN"
  python3 -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: -d "$WORK" "$RUFF_PIN"
fi
RUFF_WHEEL=$(ls "$WORK"/ruff-0.17.6-*.whl)

member_size() { python3 -c 'import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); print(max(i.file_size for i in z.infolist() if i.filename.endswith(sys.argv[2])))' "$1" "$2"; }
mib() { awk -v b="$1" 'BEGIN { printf "%.2f MiB", b / 1048576 }'; }
CW=$(stat -c %s "$CUDIST_WHEEL"); RW=$(stat -c %s "$RUFF_WHEEL")
CB=$(member_size "$CUDIST_WHEEL" /scripts/cudist); RB=$(member_size "$RUFF_WHEEL" /scripts/ruff)

# 2. pip install into a fresh venv each run.
V=$WORK/venv
JSON=$WORK/install.json
hyperfine --style basic --runs "$RUNS" --warmup 1 --export-json "$JSON" \
  --prepare "rm -rf $V && python3 -m venv $V" \
  -n cudist "$V/bin/pip install --quiet --no-index --no-deps --disable-pip-version-check $CUDIST_WHEEL" \
  -n ruff "$V/bin/pip install --quiet --no-index --no-deps --disable-pip-version-check $RUFF_WHEEL" >&2

# 3. start-up, both installed in one venv.
S=$WORK/startup
rm -rf "$S" && python3 -m venv "$S"
"$S/bin/pip" install --quiet --no-index --no-deps --disable-pip-version-check "$CUDIST_WHEEL" "$RUFF_WHEEL"
JSON2=$WORK/startup.json
hyperfine --style basic -N --runs $((RUNS * 10)) --warmup 5 --export-json "$JSON2" \
  -n "cudist --version" "$S/bin/cudist --version" \
  -n "ruff --version" "$S/bin/ruff --version" \
  -n "python -m cudist --version" "$S/bin/python -m cudist --version" >&2

machine_facts
read -r -d '' PY <<'PYEOF' || true
import json, statistics, sys
def load(p):
    return {r["command"]: r for r in json.load(open(p))["results"]}
inst, start = load(sys.argv[1]), load(sys.argv[2])
med = lambda r: statistics.median(r["times"])
lines = []
ci, ri = med(inst["cudist"]), med(inst["ruff"])
lines.append(f"| `pip install` cudist wheel (fresh venv) | {ci*1000:.0f} ms (min {min(inst['cudist']['times'])*1000:.0f}) | ruff {ri*1000:.0f} ms (min {min(inst['ruff']['times'])*1000:.0f}) | {ci/ri:.2f}x |")
cs, rs, ps = med(start["cudist --version"]), med(start["ruff --version"]), med(start["python -m cudist --version"])
lines.append(f"| `cudist --version` (start-up, catalog parsed) | {cs*1000:.1f} ms (min {min(start['cudist --version']['times'])*1000:.1f}) | `ruff --version` {rs*1000:.1f} ms | {cs/rs:.2f}x |")
lines.append(f"| `python -m cudist --version` | {ps*1000:.1f} ms | `cudist --version` {cs*1000:.1f} ms | {ps/cs:.1f}x |")
print("\n".join(lines))
PYEOF
TABLE=$(python3 -c "$PY" "$JSON" "$JSON2")
REV=$(cd "$REPO" && git rev-parse --short HEAD)$(cd "$REPO" && git diff --quiet HEAD || echo +dirty)
SECTION=$(cat <<SECTION_END

## $(date -u '+%Y-%m-%d %H:%M') UTC — cudist's wheel (issue 12), cudist $REV

Machine: $CPU, $(nproc) cores, $RAM; $TIMER; medians of $RUNS runs (start-up: $((RUNS * 10))).
Wheels: \`$(basename "$CUDIST_WHEEL")\` ($(mib "$CW"), binary $(mib "$CB")) and
\`$(basename "$RUFF_WHEEL")\` ($(mib "$RW"), binary $(mib "$RB")), both local files.

| measurement | cudist | anchor | ratio |
|---|---|---|---|
| wheel size | $(mib "$CW") | ruff $(mib "$RW") | $(awk -v a="$CW" -v b="$RW" 'BEGIN { printf "%.2fx", a / b }') |
$TABLE
SECTION_END
)
echo "$SECTION"
if [[ $APPEND == 1 ]]; then echo "$SECTION" >> "$REPO/BENCHMARKS.md"; log "appended to BENCHMARKS.md"; fi
