#!/usr/bin/env bash
# bench/doctor.sh — benchmark `cudist doctor --import cupy` (issue 5) against `ldd`.
#
# Input: a venv holding cupy-cuda12x 14.2.0 and its CUDA wheels, installed offline once into
# $CACHE/bench-doctor/venv: the cupy wheel ($CACHE/wheels, downloaded pinned if missing), the pinned
# dependencies of tests/data/cupy-cuda12x-14.2.0-deps.txt ($CACHE/cupy-deps, downloaded as
# scripts/test.sh does if missing: numpy, cuda-pathfinder, cuBLAS, NVRTC, cuFFT, cuRAND, cuSOLVER,
# cuSPARSE, nvJitLink, NCCL, cuTENSOR) and nvidia-cuda-runtime-cu12==12.9.79.  All are named
# explicitly: cupy's own metadata declares CUDA only under the extra `ctk`
# (cuda-toolkit[cublas,cudart,…]==12.*), whose cuda-toolkit 12.9.1 pins nvidia-cublas-cu12
# 12.9.1.4, not the 12.9.3.13 of the pinned list, so `cupy-cuda12x[ctk]` does not resolve offline.
#
# Measures, in one run so that the ratios compare like with like:
#   1. `cudist doctor --import cupy --python VENV/bin/python --json --ld-library-path L` with L =
#      every site-packages/nvidia/*/lib directory (and cutensor/lib) joined by ':', vs
#      `env LD_LIBRARY_PATH=L ldd F…` on every ELF file F of the package (one ldd invocation).
#   2. the same with `--ld-library-path ""` vs `env -u LD_LIBRARY_PATH ldd F…`.
#   Target: doctor <= 1/5 of ldd (medians) in both settings. These two run with `--static` (the model
#   of the files alone, what ldd is the anchor for).
#   3b. doctor's default, which runs the real `import cupy` first and then the model, against the
#      import alone (`env LD_LIBRARY_PATH=L PY -c 'import cupy'`): target <= 1.5x the import.  The ELF files are the ones doctor
#   checks: regular files (symlinks not followed) below the directory importlib.util.find_spec('cupy')
#   returns whose header says little-endian ELF executable or shared object (so not cupy_backends or
#   cupyx); the script fails unless doctor's JSON `files` lists all of these paths (doctor also
#   checks the packages cupy's import imports: cupy_backends, numpy, which ldd is not given).
#   3. for context, `PY -c 'importlib.util.find_spec("cupy")'` alone: the interpreter start that
#      --import pays for (doctor locates the package with find_spec in a child interpreter).
#   4. peak RSS (/usr/bin/time -f %M) of every command, one extra run each.
# doctor exits 1 when something will fail to load (with no LD_LIBRARY_PATH the CUDA libraries cupy
# links are not found): exit codes 0 and 1 are accepted, any other fails the run (checked on an
# untimed run first, and on every timed run through hyperfine's exported exit codes).
# Wall times: 1 warm-up + $RUNS runs (median and min), with hyperfine when installed, else a small
# Python loop.  Usage: bench/doctor.sh [--append]   (--append adds the section to BENCHMARKS.md)
# Environment: CUDIST_CACHE (work/cache dir, default <repo>/.cache), CUDIST_BIN (skip the build),
# RUNS (default 5).  Disk: 2.2 GB of dependency wheels (shared with scripts/test.sh) and a 4 GB venv.
set -euo pipefail
shopt -s inherit_errexit  # a failing timer inside $(...) must stop the script too

WHEEL_SPEC=cupy-cuda12x==14.2.0
WHEEL_NAME=cupy_cuda12x-14.2.0-cp311-cp311-manylinux2014_x86_64.whl
CUDART_SPEC=nvidia-cuda-runtime-cu12==12.9.79
PACKAGE=cupy
RUNS=${RUNS:-5}

APPEND=0
case "${1:-}" in --append) APPEND=1 ;; "") ;; *) echo "usage: $0 [--append]" >&2; exit 2 ;; esac
REPO=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${CUDIST_CACHE:-$REPO/.cache}
CACHE=$(mkdir -p "$CACHE" && cd "$CACHE" && pwd)
WORK=$CACHE/bench-doctor
VENV=$WORK/venv
DEPS=$CACHE/cupy-deps
DEPS_LIST=$REPO/tests/data/cupy-cuda12x-14.2.0-deps.txt
mkdir -p "$WORK" "$CACHE/wheels" "$DEPS"
# shellcheck source=bench/lib.sh
source "$REPO/bench/lib.sh"
[[ $(uname -m) == x86_64 ]] || { echo "bench/doctor.sh measures the Linux x86_64 wheels" >&2; exit 1; }
python3 -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' \
  || { echo "bench/doctor.sh needs python3 to be CPython 3.11 (the wheel is cp311)" >&2; exit 1; }

# --- inputs (downloaded once, pinned) ---------------------------------------------------------
PLATFORMS=(--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux2014_x86_64
  --platform manylinux_2_17_x86_64 --platform manylinux_2_12_x86_64 --platform manylinux2010_x86_64 --platform any)
WHEEL=$CACHE/wheels/$WHEEL_NAME
cached_wheel "$WHEEL_SPEC" "$WHEEL"
if ! compgen -G "$CACHE/wheels/nvidia_cuda_runtime_cu12-12.9.79-*.whl" > /dev/null; then
  log "downloading $CUDART_SPEC"
  python3 -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
    --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --python-version 3.11 \
    -d "$CACHE/wheels" "$CUDART_SPEC"
fi
mapfile -t DEP_SPECS < <(grep -v -e '^#' -e '^[[:space:]]*$' "$DEPS_LIST")
if [[ ! -f $DEPS/.complete ]]; then
  log "downloading the pinned dependencies of cupy-cuda12x (about 2 GB) into $DEPS"
  python3 -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
    --python-version 3.11 "${PLATFORMS[@]}" -d "$DEPS" "${DEP_SPECS[@]}"
  touch "$DEPS/.complete"
fi

# --- the venv (built once; rebuilt when the pins change) -------------------------------------
PINS="$WHEEL_NAME ${DEP_SPECS[*]} $CUDART_SPEC"
if [[ "$(cat "$VENV/.pins" 2>/dev/null)" != "$PINS" ]]; then
  log "installing $WHEEL_NAME and its CUDA wheels into $VENV (offline)"
  rm -rf "$VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check --no-index \
    --find-links "$DEPS" --find-links "$CACHE/wheels" "$WHEEL" "${DEP_SPECS[@]}" "$CUDART_SPEC"
  echo "$PINS" > "$VENV/.pins"
fi
PY=$VENV/bin/python
SITE=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
N_NVIDIA=$(find "$SITE/nvidia" -mindepth 2 -maxdepth 2 -name lib -type d | wc -l)
(( N_NVIDIA > 0 )) || { echo "no site-packages/nvidia/*/lib in $VENV: the CUDA wheels are missing" >&2; exit 1; }
LIBDIRS=$( (find "$SITE/nvidia" -mindepth 2 -maxdepth 2 -name lib -type d; \
            [[ -d $SITE/cutensor/lib ]] && echo "$SITE/cutensor/lib" || true) | sort | paste -sd:)
N_LIBDIRS=$(tr ':' '\n' <<< "$LIBDIRS" | wc -l)
PKG_LIST=$("$PY" -m pip list --disable-pip-version-check --format=freeze 2>/dev/null | grep -E '^(nvidia-|cutensor-|cupy-)' | paste -sd' ')

# --- the ELF files doctor checks: below find_spec(PACKAGE)'s directory, as doctor selects them ---
PKG_DIR=$("$PY" -c 'import importlib.util, sys; s = importlib.util.find_spec(sys.argv[1]); print(s.submodule_search_locations[0])' "$PACKAGE")
[[ -d $PKG_DIR ]] || { echo "find_spec($PACKAGE) gave no directory" >&2; exit 1; }
python3 - "$PKG_DIR" > "$WORK/elf-files.txt" <<'EOF'
import os, sys
def walk(p):  # sorted, symlinks not followed; little-endian ELF of type EXEC or DYN (as doctor)
    if os.path.islink(p):
        return
    if os.path.isdir(p):
        for e in sorted(os.listdir(p)):
            yield from walk(os.path.join(p, e))
    elif os.path.isfile(p):
        with open(p, "rb") as f:
            h = f.read(18)
        if len(h) == 18 and h[:4] == b"\x7fELF" and h[5] == 1 and int.from_bytes(h[16:18], "little") in (2, 3):
            yield p
for p in walk(sys.argv[1]):
    print(p)
EOF
mapfile -t ELFS < "$WORK/elf-files.txt"
N_ELF=${#ELFS[@]}
(( N_ELF > 0 )) || { echo "no ELF files under $PKG_DIR" >&2; exit 1; }
ELF_BYTES=$(cat "${ELFS[@]}" | wc -c)

# --- cudist (copied, so that a concurrent rebuild cannot swap it mid-run) ---------------------
use_cudist

DOC_LIB=("$CUDIST" doctor --static --import "$PACKAGE" --python "$PY" --json --ld-library-path "$LIBDIRS")
DOC_NONE=("$CUDIST" doctor --static --import "$PACKAGE" --python "$PY" --json --ld-library-path "")
DOC_RUN=("$CUDIST" doctor --import "$PACKAGE" --python "$PY" --json --ld-library-path "$LIBDIRS")
IMPORT=(env "LD_LIBRARY_PATH=$LIBDIRS" "$PY" -c "import $PACKAGE")
LDD_LIB=(env "LD_LIBRARY_PATH=$LIBDIRS" ldd "${ELFS[@]}")
LDD_NONE=(env -u LD_LIBRARY_PATH ldd "${ELFS[@]}")
# Context: the interpreter start that --import needs (doctor runs find_spec in it), alone.
FINDSPEC=("$PY" -c 'import importlib.util, sys; importlib.util.find_spec(sys.argv[1])' "$PACKAGE")

# --- untimed check runs: exit codes, the file set, and what each setting finds ---------------
check_doctor() {  # check_doctor NAME CMD... : run once, keep the JSON, accept exit 0 or 1
  local name=$1 rc=0; shift
  "$@" > "$WORK/$name.json" 2> "$WORK/$name.stderr" || rc=$?
  (( rc == 0 || rc == 1 )) || { echo "FAIL: $name exited $rc:" >&2; cat "$WORK/$name.stderr" >&2; exit 1; }
  echo "$rc"
}
RC_LIB=$(check_doctor doctor-lib "${DOC_LIB[@]}")
RC_NONE=$(check_doctor doctor-none "${DOC_NONE[@]}")
summary() {  # summary JSON -> "files status resolutions missing missing_symbols"
  python3 - "$1" "$WORK/elf-files.txt" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
want = open(sys.argv[2]).read().split("\n")[:-1]
# doctor also checks the packages cupy's import imports (cupy_backends, numpy): the anchor's files
# must all be among its own, and the counts are over those.
files = [f for f in r["files"] if f["path"] in set(want)]
got = [f["path"] for f in files]
if sorted(got) != sorted(want):
    sys.exit(f"FAIL: doctor checked {len(got)} of the {len(want)} files the ldd anchor covers; "
             f"only ldd: {sorted(set(want) - set(got))[:5]}")
res = sum(len(f["resolutions"]) for f in files)
miss = sum(len(f["missing"]) for f in files)
sym = sum(len(f["missing_symbols"]) for f in files)
print(len(got), r["verdict"]["status"], res, miss, sym)
EOF
}
read -r NF_LIB ST_LIB RES_LIB MISS_LIB SYM_LIB <<< "$(summary "$WORK/doctor-lib.json")"
read -r NF_NONE ST_NONE RES_NONE MISS_NONE SYM_NONE <<< "$(summary "$WORK/doctor-none.json")"
"${LDD_LIB[@]}" > "$WORK/ldd-lib.txt" 2>&1 || true
"${LDD_NONE[@]}" > "$WORK/ldd-none.txt" 2>&1 || true
NOTFOUND_LIB=$(grep -c 'not found' "$WORK/ldd-lib.txt" || true)
NOTFOUND_NONE=$(grep -c 'not found' "$WORK/ldd-none.txt" || true)

# --- timing: prints "median min" in seconds -------------------------------------------------
timeit() {  # timeit NAME CMD...   (exit codes 0 and 1 accepted, any other fails the run)
  local name=$1; shift
  log "timing $name"
  if command -v hyperfine > /dev/null; then
    hyperfine -N -i --style basic --warmup 1 --runs "$RUNS" -n "$name" --export-json "$WORK/$name.timing.json" -- "$(printf '%q ' "$@")" >&2
    python3 -c 'import json,sys
r = json.load(open(sys.argv[1]))["results"][0]
bad = [c for c in r.get("exit_codes", []) if c not in (0, 1)]
if bad: sys.exit(f"FAIL: {sys.argv[2]} exited {bad}")
print("%.4f %.4f" % (r["median"], r["min"]))' "$WORK/$name.timing.json" "$name"
  else
    python3 - "$RUNS" "$@" <<'EOF'
import statistics, subprocess, sys, time
runs, argv, times = int(sys.argv[1]), sys.argv[2:], []
for i in range(runs + 1):
    t = time.perf_counter()
    rc = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
    if rc not in (0, 1): sys.exit(f"FAIL: {argv[0]} exited {rc}")
    if i: times.append(time.perf_counter() - t)  # run 0 is the warm-up
print(f"{statistics.median(times):.4f} {min(times):.4f}")
EOF
  fi
}
rss() {  # peak RSS in MiB of one run, or n/a
  [[ -x /usr/bin/time ]] || { echo n/a; return; }
  /usr/bin/time -f %M -o "$WORK/rss.txt" "$@" > /dev/null 2>&1 || true  # exit 1 adds a line first
  tail -n 1 "$WORK/rss.txt" | awk '{printf "%.0f MiB", $1/1024}'
}

LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
T=$(timeit doctor-lib "${DOC_LIB[@]}");   read -r DL_MED DL_MIN <<< "$T"
T=$(timeit ldd-lib "${LDD_LIB[@]}");      read -r LL_MED LL_MIN <<< "$T"
T=$(timeit doctor-none "${DOC_NONE[@]}"); read -r DN_MED DN_MIN <<< "$T"
T=$(timeit ldd-none "${LDD_NONE[@]}");    read -r LN_MED LN_MIN <<< "$T"
T=$(timeit find-spec "${FINDSPEC[@]}");   read -r FS_MED FS_MIN <<< "$T"
T=$(timeit doctor-run "${DOC_RUN[@]}");   read -r DR_MED DR_MIN <<< "$T"
T=$(timeit import "${IMPORT[@]}");        read -r IM_MED IM_MIN <<< "$T"
DR_RSS=$(rss "${DOC_RUN[@]}"); IM_RSS=$(rss "${IMPORT[@]}")
DL_RSS=$(rss "${DOC_LIB[@]}");  LL_RSS=$(rss "${LDD_LIB[@]}")
DN_RSS=$(rss "${DOC_NONE[@]}"); LN_RSS=$(rss "${LDD_NONE[@]}")
LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)

# --- report -----------------------------------------------------------------------------------
ratio() {  # ratio CUDIST ANCHOR LIMIT -> "| 0.088 (11.4× faster) | ≤ 0.20 | **met** |"
  awk -v c="$1" -v a="$2" -v l="$3" 'BEGIN { r = c / a;
    if (r <= 1) printf "| %.3f (%.1f× faster) |", r, a / c; else printf "| %.3f (%.1f× slower) |", r, r;
    printf " ≤ %.2f | %s |", l, (r <= l ? "**met**" : "**NOT met**") }'
}
REV=$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)
git -C "$REPO" diff --quiet HEAD 2>/dev/null || REV="$REV+dirty"
machine_facts
GLIBC=$(ldd --version | sed -n 1p | grep -o '[0-9][0-9.]*$')
mb() { awk -v b="$1" 'BEGIN { printf "%.0f MB", b / 1e6 }'; }
verdict() { [[ $1 == 0 ]] && echo "exit 0, \`$2\`" || echo "exit $1, \`$2\`"; }

REPORT=$(cat <<EOF
## $(date -u '+%Y-%m-%d %H:%M UTC') — cudist doctor, $REV

- Machine: $(nproc) CPUs ($CPU), $RAM RAM, $(uname -sr), glibc $GLIBC; load average (1/5/15 min) $LOAD_START at start, $LOAD_END at end.
- Tools: $("$CUDIST" --version) (git $REV, $BUILT), ldd (glibc $GLIBC), $(python3 --version).
- Timer: $TIMER, 1 warm-up + $RUNS runs, page cache warm; peak RSS from one extra run each. ldd gets all files in one invocation (\`ldd F1 … F$N_ELF\`).
- Input: a venv with $PKG_LIST (installed offline from \`$WHEEL_NAME\` and the pins of \`tests/data/cupy-cuda12x-14.2.0-deps.txt\`). \`find_spec('$PACKAGE')\`: $N_ELF ELF files ($(mb "$ELF_BYTES")), the same paths as doctor's JSON \`files\`. L = the $N_LIBDIRS directories \`site-packages/nvidia/*/lib\` and \`cutensor/lib\`.

| Command | Median | Min | Peak RSS | Outcome |
|---|---:|---:|---:|---|
| \`cudist doctor --static --import cupy --python PY --json --ld-library-path L\` | $DL_MED s | $DL_MIN s | $DL_RSS | $(verdict "$RC_LIB" "$ST_LIB"): $RES_LIB resolutions, $MISS_LIB missing, $SYM_LIB missing symbols |
| \`LD_LIBRARY_PATH=L ldd F…\` | $LL_MED s | $LL_MIN s | $LL_RSS | $NOTFOUND_LIB "not found" |
| \`cudist doctor --static --import cupy --python PY --json --ld-library-path ""\` | $DN_MED s | $DN_MIN s | $DN_RSS | $(verdict "$RC_NONE" "$ST_NONE"): $RES_NONE resolutions, $MISS_NONE missing, $SYM_NONE missing symbols |
| \`ldd F…\` (no LD_LIBRARY_PATH) | $LN_MED s | $LN_MIN s | $LN_RSS | $NOTFOUND_NONE "not found" |
| context: \`PY -c 'importlib.util.find_spec("cupy")'\` (the interpreter start \`--import\` needs) | $FS_MED s | $FS_MIN s | | |
| \`cudist doctor --import cupy --python PY --json --ld-library-path L\` (runs the import, then the model) | $DR_MED s | $DR_MIN s | $DR_RSS | |
| \`LD_LIBRARY_PATH=L PY -c 'import cupy'\` | $IM_MED s | $IM_MIN s | $IM_RSS | |

| Target (doctor / ldd, medians) | Ratio | Limit | Result |
|---|---:|---:|---|
| with L $(ratio "$DL_MED" "$LL_MED" 0.20)
| without LD_LIBRARY_PATH $(ratio "$DN_MED" "$LN_MED" 0.20)
| default (real import + model) / the import alone $(ratio "$DR_MED" "$IM_MED" 1.50)
EOF
)
echo "$REPORT"
if (( APPEND )); then
  printf '\n%s\n' "$REPORT" >> "$REPO/BENCHMARKS.md"
  log "appended to $REPO/BENCHMARKS.md"
fi
