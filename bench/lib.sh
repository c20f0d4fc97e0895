# Shared by the bench/*.sh scripts (sourced, not run): logging, the cudist binary under test, and
# the machine facts each BENCHMARKS.md section records. Expects REPO and WORK to be set.

log() { echo "bench: $*" >&2; }

# Sets CUDIST (a copy, so that a concurrent rebuild cannot swap it mid-run) and BUILT (how it was
# obtained): CUDIST_BIN when given, else a release build of the repository.
use_cudist() {
  if [[ -z "${CUDIST_BIN:-}" ]]; then
    log "cargo build --release"
    (cd "$REPO" && cargo build --release -q -p cudist)
    CUDIST_BIN=$REPO/target/release/cudist; BUILT="built by this script"
  else
    BUILT="prebuilt via CUDIST_BIN, binary modified $(date -u -r "$CUDIST_BIN" '+%H:%M UTC')"
  fi
  cp "$CUDIST_BIN" "$WORK/cudist"
  CUDIST=$WORK/cudist
}

# Sets TIMER, CPU and RAM for the report.
machine_facts() {
  if command -v hyperfine > /dev/null; then TIMER="$(hyperfine --version)"; else TIMER="Python loop"; fi
  CPU=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
  RAM=$(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)
}
