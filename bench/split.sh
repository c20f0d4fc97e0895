#!/usr/bin/env bash
# bench/split.sh — benchmark `cudist split` (issue 6) on a full CUDA 13.5 environment against the
# tools that do its I/O alone.
#
# Input: the venv bench/toolkit.sh builds (every component cuda-toolkit[all]==13.5.0 pins for Linux
# x86_64, installed with --no-deps; $CACHE/bench-toolkit/venv13-full). Run bench/toolkit.sh once
# first; this script refuses to start without it.
#
# Measures, in one run so that the ratios compare like with like:
#   1. `cudist split SITE -o OUT` (format manifest: every file read once, sha256, ELF headers
#      parsed, headers scanned for #include) vs `sha256sum` of every regular file under
#      SITE/nvidia (the same bytes hashed by a tool nobody here wrote).  Target: <= 1.5x, i.e.
#      bound by reading and hashing the files.  Also recorded: the ratio to `cat` of every file
#      (reading alone), which shows how much of the time is hashing.
#   2. `cudist split --format dirs` (the above, plus a copy of every file) vs `sha256sum` + `cp -a`
#      of the tree, timed separately and added.  Target: <= 1.5x of that sum.
#   3. `cudist split --format conda --zstd-level 3` vs `tar -cf - cu13 | zstd -3 -T0` (the same
#      bytes through the same compressor; no target, it is compression-bound: recorded).
#   4. Peak RSS (/usr/bin/time -f %M) of each cudist command, one extra run each.
# Outputs go to a tmpfs (/dev/shm) when there is one (see bench/toolkit.sh for why).  Every run
# starts with no output directory (hyperfine --prepare).  Needs hyperfine.
# Usage: bench/split.sh [--append]   (--append adds the section to BENCHMARKS.md)
# Environment: CUDIST_CACHE (default <repo>/.cache), CUDIST_BIN (skip the build), RUNS (default 5;
# the conda runs use min(RUNS, 3)).
set -euo pipefail
shopt -s inherit_errexit

RUNS=${RUNS:-5}
APPEND=0
case "${1:-}" in --append) APPEND=1 ;; "") ;; *) echo "usage: $0 [--append]" >&2; exit 2 ;; esac
REPO=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${CUDIST_CACHE:-$REPO/.cache}
VENV=$CACHE/bench-toolkit/venv13-full
WORK=$CACHE/bench-split
mkdir -p "$WORK"
# shellcheck source=bench/lib.sh
source "$REPO/bench/lib.sh"
command -v hyperfine > /dev/null || { echo "bench/split.sh needs hyperfine (apt-get install hyperfine)" >&2; exit 1; }
command -v zstd > /dev/null || { echo "bench/split.sh needs zstd (apt-get install zstd)" >&2; exit 1; }
[[ -f $VENV/.pins ]] || { echo "$VENV missing: run bench/toolkit.sh once to build the full CUDA 13.5 environment" >&2; exit 1; }
SITE=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
if [[ -d /dev/shm ]]; then OUT_BASE=/dev/shm; else OUT_BASE=$WORK; fi
OUT=$(mktemp -d "$OUT_BASE/cudist-bench-split.XXXXXX")
trap 'rm -rf "$OUT"' EXIT
use_cudist

PREP=$WORK/prepare.sh
printf '#!/bin/sh\nrm -rf "$1"\nsync\n' > "$PREP"; chmod +x "$PREP"
timeit() {  # timeit NAME RUNS DEST CMD...  -> "median min"; DEST is removed before every run
  local name=$1 runs=$2 dest=$3; shift 3
  log "timing $name"
  hyperfine -N --style basic --warmup 1 --runs "$runs" --prepare "$(printf '%q ' "$PREP" "$dest")" \
    --export-json "$WORK/$name.json" -- "$(printf '%q ' "$@")" >&2
  "$PREP" "$dest"
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["results"][0]; print("%.3f %.3f" % (r["median"], r["min"]))' "$WORK/$name.json"
}
rss() {  # rss DEST CMD... -> peak RSS of one run
  local dest=$1; shift
  "$PREP" "$dest"
  /usr/bin/time -f %M -o "$WORK/rss.txt" "$@" > /dev/null 2>&1
  "$PREP" "$dest"
  awk '{ printf "%.0f MiB", $1 / 1024 }' "$WORK/rss.txt"
}

C_MAN=("$CUDIST" split "$SITE" -o "$OUT/man")
C_DIRS=("$CUDIST" split "$SITE" -o "$OUT/dirs" --format dirs)
C_CONDA=("$CUDIST" split "$SITE" -o "$OUT/conda" --format conda --zstd-level 3)
A_SUM=(sh -c 'find "$1" -type f -print0 | xargs -0 sha256sum > /dev/null' sh "$SITE/nvidia")
A_CAT=(sh -c 'find "$1" -type f -print0 | xargs -0 cat > /dev/null' sh "$SITE/nvidia")
A_CP=(cp -a "$SITE/nvidia/cu13" "$OUT/cp")
A_ZST=(sh -c 'tar -cf - -C "$1" cu13 | zstd -q -3 -T0 -o "$2"' sh "$SITE/nvidia" "$OUT/tar.zst")

# What split sees, for the report (and a check that it runs at all).
"${C_MAN[@]}" --json > "$WORK/split.json"
read -r N_COMP N_FILES N_UNASSIGNED < <(python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); print(len(m["components"]), len(m["files"]), len(m["unassigned"]))' "$WORK/split.json")
"$PREP" "$OUT/man"
BYTES=$(find "$SITE/nvidia" -type f -print0 | du -cb --files0-from=- | tail -n1 | cut -f1)
NFILES=$(find "$SITE/nvidia" -type f | wc -l)
CONDA_RUNS=$(( RUNS < 3 ? RUNS : 3 ))

LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
read -r M_MED M_MIN < <(timeit split-manifest "$RUNS" "$OUT/man" "${C_MAN[@]}")
read -r S_MED S_MIN < <(timeit sha256sum "$RUNS" "$OUT/none" "${A_SUM[@]}")
read -r R_MED R_MIN < <(timeit cat "$RUNS" "$OUT/none" "${A_CAT[@]}")
read -r D_MED D_MIN < <(timeit split-dirs "$RUNS" "$OUT/dirs" "${C_DIRS[@]}")
read -r P_MED P_MIN < <(timeit cp-a "$RUNS" "$OUT/cp" "${A_CP[@]}")
read -r K_MED K_MIN < <(timeit split-conda "$CONDA_RUNS" "$OUT/conda" "${C_CONDA[@]}")
read -r Z_MED Z_MIN < <(timeit tar-zstd "$CONDA_RUNS" "$OUT/tar.zst" "${A_ZST[@]}")
M_RSS=$(rss "$OUT/man" "${C_MAN[@]}")
D_RSS=$(rss "$OUT/dirs" "${C_DIRS[@]}")
K_RSS=$(rss "$OUT/conda" "${C_CONDA[@]}")
"${C_CONDA[@]}" > /dev/null
CONDA_BYTES=$(du -cb "$OUT"/conda/*/*.conda | tail -n1 | cut -f1); N_PKGS=$(ls "$OUT"/conda/*/*.conda | wc -l)
"$PREP" "$OUT/conda"
"${A_ZST[@]}"; ZST_BYTES=$(stat -c %s "$OUT/tar.zst"); rm -f "$OUT/tar.zst"
LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)

ratio() {  # ratio CUDIST ANCHOR LIMIT
  awk -v c="$1" -v a="$2" -v l="$3" 'BEGIN { r = c / a;
    if (l == "") printf "| %.2f | — | recorded |", r;
    else printf "| %.2f | ≤ %.1f | %s |", r, l, (r <= l ? "**met**" : "**NOT met**") }'
}
REV=$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)
git -C "$REPO" diff --quiet HEAD 2>/dev/null || REV="$REV+dirty"
machine_facts
SUMCP=$(awk -v a="$S_MED" -v b="$P_MED" 'BEGIN { printf "%.3f", a + b }')
gb() { awk -v b="$1" 'BEGIN { printf "%.2f GB", b / 1e9 }'; }

REPORT=$(cat <<EOF
## $(date -u '+%Y-%m-%d %H:%M UTC') — cudist split, cudist $REV

- Machine: $(nproc) CPUs ($CPU), $RAM RAM, $(uname -sr); load average (1/5/15 min) $LOAD_START at start, $LOAD_END at end.
- Tools: $("$CUDIST" --version) (git $REV, $BUILT), $(sha256sum --version | head -n1), $(cp --version | head -n1), $(zstd --version), $TIMER.
- Input: the full CUDA 13.5 environment of bench/toolkit.sh: $NFILES files, $(gb "$BYTES") under site-packages/nvidia (page cache warm); split finds $N_COMP components, $N_FILES file rows (links and per-output licenses included), $N_UNASSIGNED unassigned. Outputs on $(df --output=fstype "$OUT" | tail -n1).
- Runs: 1 warm-up + $RUNS (conda and tar|zstd: $CONDA_RUNS); peak RSS from one extra run each.

| Command | Median | Min | Peak RSS |
|---|---:|---:|---:|
| \`cudist split SITE -o OUT\` (manifest) | $M_MED s | $M_MIN s | $M_RSS |
| \`sha256sum\` of every file | $S_MED s | $S_MIN s | |
| \`cat\` of every file | $R_MED s | $R_MIN s | |
| \`cudist split --format dirs\` | $D_MED s | $D_MIN s | $D_RSS |
| \`cp -a nvidia/cu13\` | $P_MED s | $P_MIN s | |
| \`cudist split --format conda --zstd-level 3\` ($N_PKGS packages, $(gb "$CONDA_BYTES")) | $K_MED s | $K_MIN s | $K_RSS |
| \`tar -cf - cu13 \| zstd -3 -T0\` ($(gb "$ZST_BYTES")) | $Z_MED s | $Z_MIN s | |

| cudist / anchor (medians) | Ratio | Limit | Result |
|---|---:|---:|---|
| manifest vs sha256sum $(ratio "$M_MED" "$S_MED" 1.5)
| manifest vs cat (reading alone) $(ratio "$M_MED" "$R_MED" "")
| dirs vs sha256sum + cp -a ($SUMCP s) $(ratio "$D_MED" "$SUMCP" 1.5)
| conda vs tar \| zstd -3 $(ratio "$K_MED" "$Z_MED" "")
EOF
)
echo "$REPORT"
if (( APPEND )); then
  printf '\n%s\n' "$REPORT" >> "$REPO/BENCHMARKS.md"
  log "appended to $REPO/BENCHMARKS.md"
fi
