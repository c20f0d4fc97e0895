#!/usr/bin/env bash
# bench/select.sh — benchmark `cudist select` (issue 15) on the cupy family (cupy-cuda12x and
# cupy-cuda13x 14.2.0, 197 MiB of wheels) against `pip download --no-deps` of the build pip would be
# told to take: what a user runs either way to end up knowing (or holding) the right wheel.
#
# Two settings, measured in one run:
# - a local directory (--no-index --find-links DIR for pip): select reads every candidate whole;
# - a PEP 691 index on loopback (scripts/index-server.py, which logs every byte it sends): select
#   reads the wheels by range requests (`--fetch front`), pip downloads the chosen wheel whole
#   (`--index-url`, `--no-cache-dir`). Bytes are what the server sent, for one run of each.
#
# Measures wall time (1 warm-up + $RUNS runs, median and min) and peak RSS, for a profile with
# an H100 on driver 580 (select picks cupy-cuda13x).
# Usage: bench/select.sh [--append]
# Environment: CUDIST_CACHE (default <repo>/.cache; the wheels are $CACHE/wheels/cupy_cuda1*,
# downloaded pinned when missing), CUDIST_BIN (skip the build), RUNS (default 5).
set -euo pipefail
shopt -s inherit_errexit

RUNS=${RUNS:-5}
APPEND=0
case "${1:-}" in --append) APPEND=1 ;; "") ;; *) echo "usage: $0 [--append]" >&2; exit 2 ;; esac
REPO=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${CUDIST_CACHE:-$REPO/.cache}
CACHE=$(mkdir -p "$CACHE" && cd "$CACHE" && pwd)
WORK=$CACHE/bench-select
rm -rf "$WORK" && mkdir -p "$WORK/house" "$CACHE/wheels"
# shellcheck source=bench/lib.sh
source "$REPO/bench/lib.sh"
for spec in cupy-cuda12x==14.2.0 cupy-cuda13x==14.2.0; do
  name=${spec%%==*}; name=${name//-/_}
  if ! ls "$CACHE/wheels/${name}-14.2.0-"*.whl > /dev/null 2>&1; then
    log "pip download $spec"
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.11 \
      --platform manylinux2014_x86_64 -d "$CACHE/wheels" "$spec"
  fi
  ln -s "$CACHE/wheels/${name}-14.2.0-"*.whl "$WORK/house/"
done
use_cudist
machine_facts
cat > "$WORK/h100.json" <<'JSON'
{"name": "H100, driver 580", "driver": "580.65.06", "glibc": "2.35", "python": "3.11", "arch": "x86_64", "gpus": [{"name": "H100", "sm": 90}]}
JSON
SELECT=("$CUDIST" select -q --package cupy --host "$WORK/h100.json" "$WORK/house")
PICK=$("$CUDIST" select --print-requirement --package cupy --host "$WORK/h100.json" "$WORK/house")
PIP=(python3 -m pip download -q --disable-pip-version-check --no-deps --no-index \
  --find-links "$WORK/house" -d "$WORK/out" "$PICK")

log "timing select and pip download from a directory ($RUNS runs each)"
read -r S_MED S_MIN < <(timeit_runs "${SELECT[@]}")
read -r P_MED P_MIN < <(timeit_runs "${PIP[@]}")
S_RSS=$(peak_rss "${SELECT[@]}")
P_RSS=$(peak_rss "${PIP[@]}")

log "serving the directory as an index on loopback"
python3 "$REPO/scripts/index-server.py" "$WORK/served.log" main "$WORK/house" > "$WORK/port" &
SERVER=$!
trap 'kill $SERVER 2> /dev/null || true' EXIT
for _ in $(seq 50); do [[ -s $WORK/port ]] && break; sleep 0.1; done
INDEX=http://127.0.0.1:$(head -1 "$WORK/port")/main/simple
# Each timed run starts from an empty cache (what a front read received is kept there, and a
# second run asks for none of it again: timed apart, as the warm run).
ISELECT=(bash -c 'rm -rf "$0" && exec "$@"' "$WORK/select-cache" "$CUDIST" select -q --index
  "$INDEX" --package cupy-cuda12x --package cupy-cuda13x --host "$WORK/h100.json"
  --cache-dir "$WORK/select-cache")
IWARM=("$CUDIST" select -q --index "$INDEX" --package cupy-cuda12x --package cupy-cuda13x
  --host "$WORK/h100.json" --cache-dir "$WORK/warm-cache")
IPIP=(python3 -m pip download -q --disable-pip-version-check --no-deps --no-cache-dir
  --index-url "$INDEX" -d "$WORK/out-index" "$PICK")
sent() { : > "$WORK/served.log"; "$@" > /dev/null; rm -rf "$WORK/out-index"; awk '{ s += $2 } END { print s + 0 }' "$WORK/served.log"; }
IPICK=$("$CUDIST" select --print-requirement --index "$INDEX" --package cupy-cuda12x \
  --package cupy-cuda13x --host "$WORK/h100.json" --cache-dir "$WORK/select-cache")
[[ $IPICK == "$PICK --index-url $INDEX" ]] || { echo "select from the index picks $IPICK, from the directory $PICK" >&2; exit 1; }
log "timing select and pip download from the index ($RUNS runs each)"
read -r IS_MED IS_MIN < <(timeit_runs "${ISELECT[@]}")
read -r IP_MED IP_MIN < <(timeit_runs "${IPIP[@]}")
read -r IW_MED IW_MIN < <(timeit_runs "${IWARM[@]}")
IS_RSS=$(peak_rss "${ISELECT[@]}")
IP_RSS=$(peak_rss "${IPIP[@]}")
IS_BYTES=$(sent "${ISELECT[@]}")
IP_BYTES=$(sent "${IPIP[@]}")
IW_BYTES=$(sent "${IWARM[@]}")
ALL=$(du -L -b "$WORK/house"/*.whl | awk '{ s += $1 } END { print s }')
ONE=$(python3 -c "import glob,os,sys; n=sys.argv[1].split('==')[0].replace('-','_'); print(sum(os.path.getsize(p) for p in glob.glob(sys.argv[2]+'/'+n+'-*.whl')))" "$PICK" "$WORK/house")
mib() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
REV=$(cd "$REPO" && git rev-parse --short HEAD)$(cd "$REPO" && git diff --quiet HEAD -- crates || echo +dirty)
SECTION=$(cat <<MD

## $(date -u '+%Y-%m-%d %H:%M UTC') — cudist select (issue 15), cudist $REV

Machine: $CPU, $(nproc) cores, $RAM. Timer: $TIMER; $RUNS runs after 1 warm-up. Binary: $BUILT.
Input: cupy-cuda12x and cupy-cuda13x 14.2.0 in one directory ($(mib "$ALL") MiB), a host profile with
an H100 on driver 580; select picks \`$PICK\`. Script: \`bench/select.sh\`.

| command | median | min | peak RSS | bytes read |
|---|---|---|---|---|
| \`cudist select --package cupy --host P DIR\` | ${S_MED} s | ${S_MIN} s | ${S_RSS} MiB | $(mib "$ALL") MiB (every candidate, whole) |
| \`pip download --no-deps --no-index --find-links DIR $PICK\` | ${P_MED} s | ${P_MIN} s | ${P_RSS} MiB | $(mib "$ONE") MiB (the one wheel, copied) |

From a PEP 691 index on loopback (\`scripts/index-server.py\`; bytes as the server counted them,
pages included):

| command | median | min | peak RSS | bytes sent by the index |
|---|---|---|---|---|
| \`cudist select --index URL --package cupy-cuda12x --package cupy-cuda13x --host P\` | ${IS_MED} s | ${IS_MIN} s | ${IS_RSS} MiB | $(mib "$IS_BYTES") MiB (by range requests, empty cache) |
| the same, run again (the cache holds what the first run read) | ${IW_MED} s | ${IW_MIN} s | | $(mib "$IW_BYTES") MiB |
| \`pip download --no-deps --no-cache-dir --index-url URL $PICK\` | ${IP_MED} s | ${IP_MIN} s | ${IP_RSS} MiB | $(mib "$IP_BYTES") MiB (the one wheel) |

| ratio | value |
|---|---|
| select / pip download, from a directory (medians) | $(ratio "$S_MED" "$P_MED") |
| select / pip download, from the index (medians) | $(ratio "$IS_MED" "$IP_MED") |
| bytes: select / pip download, from the index | $(ratio "$IS_BYTES" "$IP_BYTES") |
| bytes: select / both wheels | $(ratio "$IS_BYTES" "$ALL") |
MD
)
echo "$SECTION"
if (( APPEND )); then echo "$SECTION" >> "$REPO/BENCHMARKS.md"; log "appended to BENCHMARKS.md"; fi
