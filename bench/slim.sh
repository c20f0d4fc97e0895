#!/usr/bin/env bash
# bench/slim.sh — benchmark `cudist slim` (issue 14) on cupy-cuda12x 14.2.0's wheel, against
# `unzip -t` of the same wheel (reading every member once) and `cudist repair` of it (the other
# command that rewrites a wheel).
#
# Measures, in one run so that the ratios compare like with like:
#   1. wall time, 1 warm-up + $RUNS runs, median and min (a Python loop timing each process):
#      `cudist slim W --gpu 90 -w OUT`, `unzip -tq W`, `cudist repair W -w OUT2`;
#   2. peak RSS of each (/usr/bin/time -f %M), one extra run; slim's bound is the largest member
#      + 64 MiB (it reads, slims and deflates one changed member at a time);
#   3. the wheel's size before and after, and the installed size (the members' uncompressed
#      bytes) before and after: by default slim also takes the zero tail of `.nv_fatbin` out of
#      the files (the installed size shrinks); with `--keep-layout` removed entries are only
#      zeroed in place (the installed size is unchanged, only the wheel shrinks). Both measured.
# Usage: bench/slim.sh [--append]   (--append adds the section to BENCHMARKS.md)
# Environment: CUDIST_CACHE (default <repo>/.cache; the wheel is $CACHE/wheels/<name>, downloaded
# pinned when missing), CUDIST_BIN (skip the build), RUNS (default 5).
set -euo pipefail
shopt -s inherit_errexit

WHEEL_SPEC=cupy-cuda12x==14.2.0
WHEEL_NAME=cupy_cuda12x-14.2.0-cp311-cp311-manylinux2014_x86_64.whl
RUNS=${RUNS:-5}
APPEND=0
case "${1:-}" in --append) APPEND=1 ;; "") ;; *) echo "usage: $0 [--append]" >&2; exit 2 ;; esac
REPO=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${CUDIST_CACHE:-$REPO/.cache}
CACHE=$(mkdir -p "$CACHE" && cd "$CACHE" && pwd)
WORK=$CACHE/bench-slim
rm -rf "$WORK" && mkdir -p "$WORK" "$CACHE/wheels"
# shellcheck source=bench/lib.sh
source "$REPO/bench/lib.sh"
WHEEL=$CACHE/wheels/$WHEEL_NAME
if [[ ! -f $WHEEL ]]; then
  log "pip download $WHEEL_SPEC"
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.11 \
    --platform manylinux2014_x86_64 -d "$CACHE/wheels" "$WHEEL_SPEC"
fi
use_cudist
machine_facts
TIMER="Python loop (time.perf_counter around each process)"

# timeit_runs and peak_rss: bench/lib.sh.
SLIM=("$CUDIST" slim -q "$WHEEL" --gpu 90 -w "$WORK/out")
SLIM_KL=("$CUDIST" slim -q "$WHEEL" --gpu 90 --keep-layout -w "$WORK/out")
UNZIP=(unzip -tq "$WHEEL")
REPAIR=("$CUDIST" repair -q "$WHEEL" -w "$WORK/out")
log "timing slim, unzip -t, repair ($RUNS runs each)"
read -r SLIM_MED SLIM_MIN < <(timeit_runs "${SLIM[@]}")
read -r KL_MED KL_MIN < <(timeit_runs "${SLIM_KL[@]}")
read -r UNZIP_MED UNZIP_MIN < <(timeit_runs "${UNZIP[@]}")
read -r REPAIR_MED REPAIR_MIN < <(timeit_runs "${REPAIR[@]}")
SLIM_RSS=$(peak_rss "${SLIM[@]}")
KL_RSS=$(peak_rss "${SLIM_KL[@]}")
UNZIP_RSS=$(peak_rss "${UNZIP[@]}")
REPAIR_RSS=$(peak_rss "${REPAIR[@]}")
rm -rf "$WORK/out" "$WORK/out-kl"
"${SLIM_KL[@]}"
mv "$WORK/out" "$WORK/out-kl"
"${SLIM[@]}"
OUT=$WORK/out/$WHEEL_NAME
read -r BEFORE AFTER INST_BEFORE INST_AFTER LARGEST KL_AFTER KL_INST < <(python3 - "$WHEEL" "$OUT" "$WORK/out-kl/$WHEEL_NAME" <<'EOF'
import os, sys, zipfile
a, b, c = sys.argv[1], sys.argv[2], sys.argv[3]
inst = lambda w: sum(i.file_size for i in zipfile.ZipFile(w).infolist())
largest = max(i.file_size for i in zipfile.ZipFile(a).infolist())
print(os.path.getsize(a), os.path.getsize(b), inst(a), inst(b), largest, os.path.getsize(c), inst(c))
EOF
)
mib() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
BOUND=$(( LARGEST / 1048576 + 64 ))
REV=$(cd "$REPO" && git rev-parse --short HEAD)$(cd "$REPO" && git diff --quiet HEAD -- crates || echo +dirty)
SECTION=$(cat <<EOF

## $(date -u '+%Y-%m-%d %H:%M UTC') — cudist slim (issue 14), cudist $REV

Machine: $CPU, $(nproc) cores, $RAM. Timer: $TIMER; $RUNS runs after 1 warm-up. Binary: $BUILT.
Input: \`$WHEEL_NAME\` ($(mib "$BEFORE") MiB; its largest member $(mib "$LARGEST") MiB). Script: \`bench/slim.sh\`.

| command | median | min | peak RSS |
|---|---|---|---|
| \`cudist slim W --gpu 90 -w OUT\` | ${SLIM_MED} s | ${SLIM_MIN} s | ${SLIM_RSS} MiB |
| \`cudist slim W --gpu 90 --keep-layout -w OUT\` | ${KL_MED} s | ${KL_MIN} s | ${KL_RSS} MiB |
| \`unzip -tq W\` | ${UNZIP_MED} s | ${UNZIP_MIN} s | ${UNZIP_RSS} MiB |
| \`cudist repair W -w OUT\` | ${REPAIR_MED} s | ${REPAIR_MIN} s | ${REPAIR_RSS} MiB |

| ratio | value |
|---|---|
| slim / \`unzip -t\` (medians) | $(ratio "$SLIM_MED" "$UNZIP_MED") |
| slim / repair (medians) | $(ratio "$SLIM_MED" "$REPAIR_MED") |
| wheel after / before | $(mib "$AFTER") / $(mib "$BEFORE") MiB = $(ratio "$AFTER" "$BEFORE") |
| installed after / before | $(mib "$INST_AFTER") / $(mib "$INST_BEFORE") MiB = $(ratio "$INST_AFTER" "$INST_BEFORE") (the zero tails taken out of the files) |
| with \`--keep-layout\`: wheel after / before; installed after / before | $(mib "$KL_AFTER") MiB = $(ratio "$KL_AFTER" "$BEFORE"); $(mib "$KL_INST") MiB = $(ratio "$KL_INST" "$INST_BEFORE") (zeroed in place) |
| slim's peak RSS against its bound (largest member + 64 MiB) | ${SLIM_RSS} / ${BOUND} MiB |
EOF
)
echo "$SECTION"
if (( APPEND )); then echo "$SECTION" >> "$REPO/BENCHMARKS.md"; log "appended to BENCHMARKS.md"; fi
