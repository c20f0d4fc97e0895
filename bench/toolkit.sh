#!/usr/bin/env bash
# bench/toolkit.sh — benchmark `cudist toolkit` (issue 4) against the copy tools it stands in for.
#
# Input: a venv holding a *full* CUDA 13.5 environment, i.e. every component that the extra `all`
# of the `cuda-toolkit==13.5.0` metapackage pins for Linux x86_64, each installed with
# `pip install --no-deps` (no other packages).  The pins are read from that metapackage's METADATA
# (the wheel is downloaded into $CACHE/wheels if it is not there yet) by evaluating each
# Requires-Dist marker for sys_platform=linux, platform_machine=x86_64, extra=all; the one pin that
# is a range (nvidia-nvjitlink>=13.5.37,<14) is fixed at its lower bound so that reruns install the
# same files.  Components the metapackage pins only for other platforms (nvidia-cudla: aarch64
# only), or that turn out to have no wheel for this machine, are skipped and listed.
#
# Measures, in one run so that the ratios compare like with like:
#   1. `cudist toolkit --python VENV/bin/python --out R --force -q` (a root of symlinks) vs
#      `cp -as SITE/nvidia/cu13 R` (GNU cp making a symlink tree: what Nixpkgs' symlinkJoin does).
#      Target: well under 1 s wall time (absolute); the ratio is recorded.
#   2. the same with `--copy` (a relocatable root of copies) vs `cp -a SITE/nvidia/cu13 R`.
#   3. for context, link mode with `--site-packages SITE` instead of `--python` (no interpreter
#      started).
#   4. peak RSS (/usr/bin/time -f %M) of every command, one extra run each; file counts and sizes
#      of the input tree and of every output.
# Every run starts with no output directory (hyperfine --prepare removes it and runs `sync`, so
# that the write-back of one copy run does not land in the next); --force is then a no-op.
# The outputs go to a tmpfs (/dev/shm) by default, the inputs stay where the cache is.  Why: on an
# ext4 without a journal (as on the VMs these numbers were first taken on) the kernel's inode
# allocator skips, one by one, every inode deleted in the last 60-360 s (find_inode_bit ->
# recently_deleted), so creating the ~3,000 entries of a root right after removing the previous
# one costs 0.15-2.3 s of system time depending on where the inodes land -- for `cp -as` and
# cudist alike -- and that noise, not the tools, would be measured.  TOOLKIT_BENCH_OUT=DIR puts
# the outputs elsewhere (the filesystem type is recorded in the report).
# Wall times: 1 warm-up + $RUNS runs (median and min), with hyperfine when installed, else a small
# Python loop.  Usage: bench/toolkit.sh [--append]   (--append adds the section to BENCHMARKS.md)
# Environment: CUDIST_CACHE (work/cache dir, default <repo>/.cache), CUDIST_BIN (skip the build),
# RUNS (default 5), TOOLKIT_BENCH_OUT (the directory in which the roots are written, in a
# temporary subdirectory removed at the end; default /dev/shm).  Disk: 1.7 GB of wheels and a 2.6 GB
# environment; the output directory needs room for one copy of the environment.
set -euo pipefail
shopt -s inherit_errexit  # a failing timer inside $(...) must stop the script too

META_SPEC=cuda-toolkit==13.5.0
META_WHEEL=cuda_toolkit-13.5.0-py2.py3-none-any.whl
RUNS=${RUNS:-5}

APPEND=0
case "${1:-}" in --append) APPEND=1 ;; "") ;; *) echo "usage: $0 [--append]" >&2; exit 2 ;; esac
REPO=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${CUDIST_CACHE:-$REPO/.cache}
CACHE=$(mkdir -p "$CACHE" && cd "$CACHE" && pwd)  # cp -as needs an absolute source
WHEELS=$CACHE/wheels13-full
WORK=$CACHE/bench-toolkit
VENV=$WORK/venv13-full
fstype() { df --output=fstype "$1" | tail -n 1; }
if [[ -n ${TOOLKIT_BENCH_OUT:-} ]]; then OUT_BASE=$TOOLKIT_BENCH_OUT
elif [[ -d /dev/shm && $(fstype /dev/shm) == tmpfs ]]; then OUT_BASE=/dev/shm
else OUT_BASE=$WORK; fi
mkdir -p "$WORK" "$OUT_BASE" "$WHEELS" "$CACHE/wheels"
OUT=$(mktemp -d "$(cd "$OUT_BASE" && pwd)/cudist-bench-toolkit.XXXXXX")
trap 'rm -rf "$OUT"' EXIT
# shellcheck source=bench/lib.sh
source "$REPO/bench/lib.sh"
[[ $(uname -m) == x86_64 ]] || { echo "bench/toolkit.sh measures the Linux x86_64 environment" >&2; exit 1; }

# --- the pins of cuda-toolkit[all]==13.5.0 for Linux x86_64 ------------------------------------
if [[ ! -f $CACHE/wheels/$META_WHEEL ]]; then
  log "downloading $META_SPEC (the metapackage only)"
  python3 -m pip download -q --no-deps --only-binary=:all: -d "$CACHE/wheels" "$META_SPEC"
fi
PIN_LINES=$(python3 - "$CACHE/wheels/$META_WHEEL" <<'EOF'
import sys, zipfile
from pip._vendor.packaging.requirements import Requirement
z = zipfile.ZipFile(sys.argv[1])
meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
def env(machine): return {"sys_platform": "linux", "platform_machine": machine, "extra": "all"}
pins, other = {}, set()
for line in z.read(meta).decode().splitlines():
    if not line.startswith("Requires-Dist:"):
        continue
    r = Requirement(line.split(":", 1)[1].strip())
    if r.marker is None:
        continue
    if r.marker.evaluate(env("x86_64")):
        specs = list(r.specifier)
        exact = [s for s in specs if s.operator == "=="]
        if exact:
            spec = f"=={exact[0].version}"
        else:  # a range: fix it at its lower bound (reproducible, and the toolkit's own release)
            spec = "==" + next(s.version for s in specs if s.operator == ">=")
        pins[r.name] = r.name + spec
    elif r.marker.evaluate(env("aarch64")):
        other.add(r.name)
for name in sorted(pins):
    print("pin", pins[name])
for name in sorted(other - set(pins)):
    print("skip", name, "(pinned for linux aarch64 only)")
EOF
)
mapfile -t PINS < <(awk '$1 == "pin" { print $2 }' <<< "$PIN_LINES")
mapfile -t SKIPPED < <(awk '$1 == "skip" { $1 = ""; sub(/^ /, ""); print }' <<< "$PIN_LINES")
(( ${#PINS[@]} > 0 )) || { echo "no pins read from $META_WHEEL" >&2; exit 1; }

# --- the environment: download once into $WHEELS, install offline ------------------------------
if [[ "$(cat "$VENV/.pins" 2>/dev/null)" != "${PINS[*]}" ]]; then
  INSTALL=()
  for spec in "${PINS[@]}"; do
    # pip download skips files it already has, but asks the index; a wheel of that exact version
    # for this platform in the cache is enough (the * of a pin like 13.10.0.20.* matches builds).
    name=${spec%%==*}; ver=${spec#*==}; ver=${ver%.\*}
    if compgen -G "$WHEELS/${name//-/_}-$ver*-*.whl" > /dev/null; then INSTALL+=("$spec"); continue; fi
    log "downloading $spec"
    if python3 -m pip download -q --no-deps --only-binary=:all: -d "$WHEELS" "$spec"; then
      INSTALL+=("$spec")
    else
      SKIPPED+=("$spec (no wheel for this platform)")
    fi
  done
  log "installing ${#INSTALL[@]} components into $VENV"
  rm -rf "$VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --no-index --no-deps --find-links "$WHEELS" "${INSTALL[@]}"
  printf '%s\n' "${SKIPPED[@]}" | grep -v '^$' > "$VENV/.skipped" || true
  echo "${PINS[*]}" > "$VENV/.pins"
fi
mapfile -t SKIPPED < <(grep -v '^$' "$VENV/.skipped" || true)
SITE=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
SRC=$SITE/nvidia/cu13
[[ -d $SRC ]] || { echo "$SRC missing: the environment holds no CUDA 13 wheels" >&2; exit 1; }
INSTALLED=$("$VENV/bin/pip" list --format=freeze 2>/dev/null | grep -ci '^nvidia-')
OTHER_DIRS=$(find "$SITE/nvidia" -mindepth 1 -maxdepth 1 ! -name cu13 ! -name __pycache__ ! -name '__init__.py' -printf '%f ' | sed 's/ $//')
WHEEL_BYTES=$(for spec in "${PINS[@]}"; do
  name=${spec%%==*}; ver=${spec#*==}; ver=${ver%.\*}
  compgen -G "$WHEELS/${name//-/_}-$ver*-*.whl" || true
done | sort -u | xargs -r stat -c %s | awk '{ s += $1 } END { print s + 0 }')

# --- cudist (copied, so that a concurrent rebuild cannot swap it mid-run) ---------------------
use_cudist

# --- commands ---------------------------------------------------------------------------------
PREP=$WORK/prepare.sh  # removes the output of the previous run, then flushes dirty pages
printf '#!/bin/sh\nrm -rf "$1"\nsync\n' > "$PREP"; chmod +x "$PREP"
C_LINK=("$CUDIST" toolkit --python "$VENV/bin/python" --out "$OUT/link" --force -q)
C_COPY=("$CUDIST" toolkit --python "$VENV/bin/python" --out "$OUT/copy" --force -q --copy)
C_SITE=("$CUDIST" toolkit --site-packages "$SITE" --out "$OUT/site" --force -q)
A_LINK=(cp -as "$SRC" "$OUT/cp-as")
A_COPY=(cp -a "$SRC" "$OUT/cp-a")

# --- a sanity check before anything is timed ---------------------------------------------------
"$PREP" "$OUT/link"
"$CUDIST" toolkit --python "$VENV/bin/python" --out "$OUT/link" --force --json > "$WORK/link.json"
for f in bin/nvcc include/cuda.h include/cublas_v2.h lib64/libcudart.so lib64/libcublas.so \
         lib64/libcufft.so lib64/libnvrtc.so lib64/stubs/libcuda.so nvvm/bin/cicc; do
  [[ -e $OUT/link/$f ]] || { echo "FAIL: the assembled root lacks $f (or it dangles)" >&2; exit 1; }
done

# --- timing: prints "median min" in seconds -------------------------------------------------
timeit() {  # timeit NAME DEST CMD...   (DEST is removed before every run)
  local name=$1 dest=$2; shift 2
  log "timing $name"
  if command -v hyperfine > /dev/null; then
    hyperfine -N --style basic --warmup 1 --runs "$RUNS" --prepare "$(printf '%q ' "$PREP" "$dest")" \
      --export-json "$WORK/$name.json" -- "$(printf '%q ' "$@")" >&2
    python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["results"][0]; print("%.4f %.4f" % (r["median"], r["min"]))' "$WORK/$name.json"
  else
    python3 - "$RUNS" "$PREP" "$dest" "$@" <<'EOF'
import statistics, subprocess, sys, time
runs, prep, dest, argv, times = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4:], []
for i in range(runs + 1):
    subprocess.run([prep, dest], check=True)
    t = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    if i: times.append(time.perf_counter() - t)  # run 0 is the warm-up
print(f"{statistics.median(times):.4f} {min(times):.4f}")
EOF
  fi
  "$PREP" "$dest"
}
rss() {  # rss DEST CMD... -> peak RSS of one run, or n/a
  local dest=$1; shift
  [[ -x /usr/bin/time ]] || { echo n/a; return; }
  "$PREP" "$dest"
  /usr/bin/time -f %M -o "$WORK/rss.txt" "$@" > /dev/null 2>&1
  awk '{ printf "%.0f MiB", $1 / 1024 }' "$WORK/rss.txt"
}
count() {  # count DIR -> "F files, L symlinks"
  printf '%s files, %s symlinks' "$(find "$1" -type f | wc -l)" "$(find "$1" -type l | wc -l)"
}
gb() { awk -v b="$1" 'BEGIN { printf "%.2f GB", b / 1e9 }'; }
bytes() { du -sb "$1" | cut -f1; }

LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
T=$(timeit cudist-toolkit-link "$OUT/link" "${C_LINK[@]}");  read -r CL_MED CL_MIN <<< "$T"
T=$(timeit cp-as "$OUT/cp-as" "${A_LINK[@]}");               read -r AL_MED AL_MIN <<< "$T"
T=$(timeit cudist-toolkit-site "$OUT/site" "${C_SITE[@]}");  read -r CS_MED CS_MIN <<< "$T"
T=$(timeit cudist-toolkit-copy "$OUT/copy" "${C_COPY[@]}");  read -r CC_MED CC_MIN <<< "$T"
T=$(timeit cp-a "$OUT/cp-a" "${A_COPY[@]}");                 read -r AC_MED AC_MIN <<< "$T"
# Peak RSS, then what that run wrote; each output is removed before the next (tmpfs is memory).
CL_RSS=$(rss "$OUT/link" "${C_LINK[@]}"); N_LINK=$(count "$OUT/link"); "$PREP" "$OUT/link"
AL_RSS=$(rss "$OUT/cp-as" "${A_LINK[@]}"); N_AS=$(count "$OUT/cp-as"); "$PREP" "$OUT/cp-as"
CS_RSS=$(rss "$OUT/site" "${C_SITE[@]}"); "$PREP" "$OUT/site"
CC_RSS=$(rss "$OUT/copy" "${C_COPY[@]}"); N_COPY=$(count "$OUT/copy"); COPY_BYTES=$(bytes "$OUT/copy"); "$PREP" "$OUT/copy"
AC_RSS=$(rss "$OUT/cp-a" "${A_COPY[@]}"); N_A=$(count "$OUT/cp-a"); A_BYTES=$(bytes "$OUT/cp-a"); "$PREP" "$OUT/cp-a"
LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)
SRC_BYTES=$(bytes "$SRC"); NV_BYTES=$(bytes "$SITE/nvidia"); N_SRC=$(count "$SRC")
SECONDS_JSON=$(python3 -c 'import json,sys; print("%.3f" % json.load(open(sys.argv[1]))["seconds"])' "$WORK/link.json")

# --- report -----------------------------------------------------------------------------------
ratio() {  # ratio CUDIST ANCHOR -> "| 0.088 (11.4× faster) |"
  awk -v c="$1" -v a="$2" 'BEGIN { r = c / a;
    if (r <= 1) printf "| %.2f (%.1f× faster) |", r, a / c; else printf "| %.2f (%.1f× slower) |", r, r }'
}
REV=$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)
git -C "$REPO" diff --quiet HEAD 2>/dev/null || REV="$REV+dirty"
machine_facts
FS_IN=$(fstype "$SRC"); FS_OUT=$(fstype "$OUT")
SKIP_TEXT=$( (( ${#SKIPPED[@]} )) && printf '%s; ' "${SKIPPED[@]}" | sed 's/; $//' || echo none)
[[ -n $OTHER_DIRS ]] && OTHER_TEXT="; also under nvidia/, outside the anchors' tree: $OTHER_DIRS" || OTHER_TEXT=""

FS_NOTE=""
[[ $FS_OUT == tmpfs ]] && FS_NOTE='Roots written to tmpfs (`TOOLKIT_BENCH_OUT` changes it): on an ext4 without a journal, removing a root and writing the next makes the kernel'"'"'s inode allocator step over every recently deleted inode (`recently_deleted`), which costs `cp -as` and cudist alike up to seconds of system time; see the header of `bench/toolkit.sh`. '

REPORT=$(cat <<EOF
## $(date -u '+%Y-%m-%d %H:%M UTC') — cudist toolkit, $REV

- Machine: $(nproc) CPUs ($CPU), $RAM RAM, $(uname -sr); load average (1/5/15 min) $LOAD_START at start, $LOAD_END at end.
- Tools: $("$CUDIST" --version) (git $REV, $BUILT), $(cp --version | head -1), $(python3 --version).
- Timer: $TIMER, 1 warm-up + $RUNS runs, page cache warm; before every run the output is removed and \`sync\` run (not timed); peak RSS from one extra run each. Environment on $FS_IN, roots written to $FS_OUT.
- Input: \`$META_SPEC\` extra \`all\` for Linux x86_64, $INSTALLED components installed with \`--no-deps\` ($(gb "$WHEEL_BYTES") of wheels; skipped: $SKIP_TEXT). \`site-packages/nvidia\`: $(gb "$NV_BYTES"); \`nvidia/cu13\`: $(gb "$SRC_BYTES"), $N_SRC$OTHER_TEXT.

| Command | Median | Min | Peak RSS | Output |
|---|---:|---:|---:|---|
| \`cudist toolkit --python PY --out R --force -q\` | $CL_MED s | $CL_MIN s | $CL_RSS | $N_LINK |
| \`cp -as SITE/nvidia/cu13 R\` | $AL_MED s | $AL_MIN s | $AL_RSS | $N_AS |
| \`cudist toolkit --site-packages SITE --out R --force -q\` | $CS_MED s | $CS_MIN s | $CS_RSS | (as the first) |
| \`cudist toolkit --python PY --out R --force -q --copy\` | $CC_MED s | $CC_MIN s | $CC_RSS | $N_COPY, $(gb "$COPY_BYTES") |
| \`cp -a SITE/nvidia/cu13 R\` | $AC_MED s | $AC_MIN s | $AC_RSS | $N_A, $(gb "$A_BYTES") |

| Target | Value | Limit | Result |
|---|---:|---:|---|
| \`cudist toolkit\` (links), median wall time | $CL_MED s | well under 1 s | $(awk -v m="$CL_MED" 'BEGIN { print (m < 1 ? "**met**" : "**NOT met**") }') |
| links vs \`cp -as\` (medians) $(ratio "$CL_MED" "$AL_MED") recorded | |
| copies vs \`cp -a\` (medians) $(ratio "$CC_MED" "$AC_MED") recorded | |

${FS_NOTE}The untimed check run before the timings (links, \`--json\`) reported \`"seconds": $SECONDS_JSON\`; it checks that the root has \`bin/nvcc\`, \`nvvm/bin/cicc\`, \`include/cuda.h\`, \`include/cublas_v2.h\`, \`lib64/stubs/libcuda.so\` and the linker names of cudart, cuBLAS, cuFFT and NVRTC.
EOF
)
echo "$REPORT"
if (( APPEND )); then
  printf '\n%s\n' "$REPORT" >> "$REPO/BENCHMARKS.md"
  log "appended to $REPO/BENCHMARKS.md"
fi
