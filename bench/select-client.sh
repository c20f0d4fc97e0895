#!/usr/bin/env bash
# bench/select-client.sh — the HTTP client of `cudist select` (issue 35): the same select over
# https from PyPI with two cudist binaries, one run after the other in turn, so both see the same
# network. Before issue 35 every https request was one `curl` process (a TLS handshake each);
# after it, one ureq agent keeps its connection. Each run starts with an empty cache (so every
# range is asked for), for a T4 on driver 535 (`--fetch front`, the default).
#
# Measures per binary: wall time (median and min of $RUNS runs), peak RSS of one run, and the
# requests and bytes select reports (from its --json).
# Usage: CUDIST_OLD=/path/to/old/cudist bench/select-client.sh [--append]
# Environment: CUDIST_OLD (required: the binary to compare against), CUDIST_BIN (skip the build of
# the new one), RUNS (default 3), PACKAGES (default "nvidia-nvjitlink-cu12 cupy-cuda12x").
set -euo pipefail
shopt -s inherit_errexit

RUNS=${RUNS:-3}
PACKAGES=${PACKAGES:-nvidia-nvjitlink-cu12 cupy-cuda12x}
APPEND=0
case "${1:-}" in --append) APPEND=1 ;; "") ;; *) echo "usage: $0 [--append]" >&2; exit 2 ;; esac
[[ -x "${CUDIST_OLD:-}" ]] || { echo "set CUDIST_OLD to the cudist binary to compare against" >&2; exit 2; }
REPO=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${CUDIST_CACHE:-$REPO/.cache}
WORK=$(mkdir -p "$CACHE" && cd "$CACHE" && pwd)/bench-select-client
rm -rf "$WORK" && mkdir -p "$WORK"
# shellcheck source=bench/lib.sh
source "$REPO/bench/lib.sh"
use_cudist
cp "$CUDIST_OLD" "$WORK/cudist-old"
machine_facts
cat > "$WORK/t4.json" <<'JSON'
{"name": "T4, driver 535", "driver": "535.183.01", "glibc": "2.35", "python": "3.11", "arch": "x86_64", "gpus": [{"name": "T4", "sm": 75}]}
JSON
ROWS=""
for pkg in $PACKAGES; do
  for which in old new; do
    bin=$WORK/cudist; [[ $which == old ]] && bin=$WORK/cudist-old
    : > "$WORK/$which.times"
  done
  for i in $(seq "$RUNS"); do
    for which in old new; do
      bin=$WORK/cudist; [[ $which == old ]] && bin=$WORK/cudist-old
      rm -rf "$WORK/cache"
      /usr/bin/time -f "%e %M" -o "$WORK/t" "$bin" select --json --package "$pkg" \
        --host "$WORK/t4.json" --index https://pypi.org/simple --cache-dir "$WORK/cache" \
        > "$WORK/$which.json" 2> /dev/null || { log "$which select $pkg failed"; exit 1; }
      cat "$WORK/t" >> "$WORK/$which.times"
    done
  done
  for which in old new; do
    read -r med min rss req bytes < <(python3 - "$WORK/$which.times" "$WORK/$which.json" <<'PY'
import json, re, statistics, sys
t = [tuple(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
v = json.load(open(sys.argv[2]))
ix = v["indexes"][0]
# "read by range requests: … 122 request(s); …" per candidate read by range requests.
req = sum(int(m.group(1)) for c in v.get("candidates", []) for r in c.get("reasons", [])
          for m in [re.search(r"(\d+) request\(s\)", r)] if m)
print("%.2f %.2f %.0f %s %.1f" % (statistics.median(x for x, _ in t), min(x for x, _ in t),
      max(r for _, r in t) / 1024, req or "-", ix.get("bytes_received", 0) / 1048576))
PY
)
    ROWS+="| $pkg | $which | $med s (min $min) | $rss MiB | $req | $bytes MiB |"$'\n'
  done
done
OUT="## $(date -u '+%Y-%m-%d %H:%M UTC') — select's HTTP client (issue 35), cudist $(cd "$REPO" && git rev-parse --short HEAD)

Machine: $CPU, $(nproc) cores, $RAM. \`bench/select-client.sh\` ($RUNS runs each, alternating,
empty cache each run, https://pypi.org/simple, T4 on 535). *old* is \`$CUDIST_OLD\` (one curl
process per https request); *new* is this tree's release build ($BUILT; one ureq agent).

| package | client | wall | peak RSS | range requests | received |
|---|---|---|---|---|---|
$ROWS"
echo "$OUT"
if [[ $APPEND == 1 ]]; then printf '\n%s' "$OUT" >> "$REPO/BENCHMARKS.md"; fi
