#!/usr/bin/env bash
# bench/build.sh — what building cudist costs on this machine (issue 19): before and after the
# network stack left the dependency tree (a361875: .conda read and written with zip, zstd, bzip2
# and tar instead of rattler_package_streaming, which pulled in tokio, hyper, reqwest and rustls).
#
# For each revision (BEFORE, default a361875^; AFTER, default HEAD), in a fresh clone with its own
# empty target directory, the registry's sources fetched first (untimed, so the network is not
# measured):
#   1. packages in Cargo.lock, and crates compiled by the cold release build ("Compiling" lines);
#   2. cold `cargo build --release -p cudist` (what `pip install .` and `cargo install` compile);
#   3. cold `cargo test --workspace --all-targets --no-run` in another empty target directory (what
#      scripts/test.sh compiles before the first test runs), and how many test targets it builds;
#   4. the size of target/release/cudist.
# Target (issue 19): the cold test build at most half of BEFORE's.  There is no anchor tool: the
# ratio is AFTER / BEFORE.  One run each (a cold build is minutes, and repeated runs would be warm);
# nothing else should run on the machine meanwhile.
# A revision's results are kept (bench-build-results/<sha>.env beside the work dir) and reused by
# the next run, which then only measures the revisions it has not seen; FRESH=1 measures all.
# Usage: bench/build.sh [--append]   (--append adds the section to BENCHMARKS.md)
# Environment: CUDIST_CACHE (work dir, default <repo>/.cache), BEFORE, AFTER, FRESH.
set -euo pipefail
shopt -s inherit_errexit

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WORK="${CUDIST_CACHE:-$REPO/.cache}/bench-build"
RESULTS="${CUDIST_CACHE:-$REPO/.cache}/bench-build-results"
mkdir -p "$RESULTS"
BEFORE="${BEFORE:-a361875^}"
AFTER="${AFTER:-HEAD}"
# shellcheck source=bench/lib.sh
source "$REPO/bench/lib.sh"
machine_facts

rm -rf "$WORK"
mkdir -p "$WORK"

# measure NAME REV: fills the row variables NAME_{rev,lock,compiled,release,test,targets,size}.
measure() {
  local name="$1" rev="$2" src="$WORK/$1"
  local full; full="$(git -C "$REPO" rev-parse "$rev")"
  if [[ -z "${FRESH:-}" && -f "$RESULTS/$full.env" ]]; then
    log "$name: $rev: results of an earlier run ($RESULTS/$full.env)"
    # shellcheck disable=SC1090
    source "$RESULTS/$full.env"
    for v in rev lock compiled release test tcompiled targets size when; do
      printf -v "${name}_$v" '%s' "$(eval echo "\$r_$v")"
    done
    return
  fi
  git clone -q "$REPO" "$src"
  git -C "$src" checkout -q "$(git -C "$REPO" rev-parse "$rev")"
  local sha; sha="$(git -C "$src" rev-parse --short HEAD)"
  log "$name: $sha: cargo fetch (untimed)"
  (cd "$src" && cargo fetch -q)
  local lock; lock="$(grep -c '^name = ' "$src/Cargo.lock")"
  log "$name: cold cargo build --release -p cudist"
  local t0 t1
  t0=$(date +%s.%N)
  (cd "$src" && CARGO_TARGET_DIR="$WORK/$name-release" cargo build --release -p cudist 2> "$WORK/$name-release.log")
  t1=$(date +%s.%N)
  local release; release=$(python3 -c "print(f'{$t1 - $t0:.0f}')")
  local compiled; compiled="$(grep -c '^ *Compiling ' "$WORK/$name-release.log")"
  local size; size="$(stat -c %s "$WORK/$name-release/release/cudist")"
  log "$name: cold cargo test --workspace --all-targets --no-run"
  t0=$(date +%s.%N)
  (cd "$src" && CARGO_TARGET_DIR="$WORK/$name-test" cargo test --workspace --all-targets --no-run 2> "$WORK/$name-test.log")
  t1=$(date +%s.%N)
  local test; test=$(python3 -c "print(f'{$t1 - $t0:.0f}')")
  local targets; targets="$(grep -c '^ *Executable ' "$WORK/$name-test.log")"
  local tcompiled; tcompiled="$(grep -c '^ *Compiling ' "$WORK/$name-test.log")"
  printf -v "${name}_rev" '%s' "$sha"
  printf -v "${name}_lock" '%s' "$lock"
  printf -v "${name}_compiled" '%s' "$compiled"
  printf -v "${name}_release" '%s' "$release"
  printf -v "${name}_test" '%s' "$test"
  printf -v "${name}_tcompiled" '%s' "$tcompiled"
  printf -v "${name}_targets" '%s' "$targets"
  printf -v "${name}_size" '%s' "$size"
  printf -v "${name}_when" '%s' "$(date -u '+%Y-%m-%d %H:%M UTC')"
  local v
  for v in rev lock compiled release test tcompiled targets size when; do
    printf 'r_%s=%q\n' "$v" "$(eval echo "\$${name}_$v")"
  done > "$RESULTS/$full.env"
  # The target directories are gigabytes: keep only the logs.
  rm -rf "$WORK/$name-release" "$WORK/$name-test" "$src"
}

measure before "$BEFORE"
measure after "$AFTER"

ratio() { python3 -c "print(f'{$2 / $1:.2f}x')"; }
mib() { python3 -c "print(f'{$1 / 1048576:.2f} MiB')"; }
mmss() { python3 -c "print(f'{$1 // 60:.0f} min {$1 % 60:02.0f} s')"; }
RUSTC="$(rustc --version)"
REPORT="$(cat <<EOF

## $(date -u '+%Y-%m-%d %H:%M UTC') — building cudist (issue 19): before and after the network stack left, $before_rev vs $after_rev

Machine: $CPU, $(nproc) cores, $RAM; $RUSTC. \`bench/build.sh\`: fresh clones, empty target
directories, registry sources fetched beforehand (untimed); one run each, nothing else running;
before measured $before_when, after $after_when.

| measurement | before ($before_rev) | after ($after_rev) | after / before |
|---|---|---|---|
| packages in Cargo.lock | $before_lock | $after_lock | $(ratio "$before_lock" "$after_lock") |
| crates compiled, cold \`cargo build --release -p cudist\` | $before_compiled | $after_compiled | $(ratio "$before_compiled" "$after_compiled") |
| cold \`cargo build --release -p cudist\` | $(mmss "$before_release") | $(mmss "$after_release") | $(ratio "$before_release" "$after_release") |
| crates compiled, cold test build | $before_tcompiled | $after_tcompiled | $(ratio "$before_tcompiled" "$after_tcompiled") |
| cold \`cargo test --workspace --all-targets --no-run\` | $(mmss "$before_test") ($before_targets test targets) | $(mmss "$after_test") ($after_targets test targets) | $(ratio "$before_test" "$after_test") |
| \`target/release/cudist\` | $(mib "$before_size") | $(mib "$after_size") | $(ratio "$before_size" "$after_size") |
EOF
)"
echo "$REPORT"
if [[ "${1:-}" == "--append" ]]; then
  echo "$REPORT" >> "$REPO/BENCHMARKS.md"
  log "appended to BENCHMARKS.md"
fi
