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

# timeit_runs CMD... -> "median min" in seconds over $RUNS runs after one warm-up (a Python loop
# around each process), $WORK/out emptied before every run; a non-zero exit fails the bench.
timeit_runs() {
  python3 - "$RUNS" "$WORK/out" "$@" <<'PY'
import shutil, statistics, subprocess, sys, time
runs, out, cmd = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
times = []
for i in range(runs + 1):
    shutil.rmtree(out, ignore_errors=True)
    t = time.perf_counter()
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    d = time.perf_counter() - t
    if r.returncode != 0:
        sys.exit(f"{cmd}: exit {r.returncode}")
    if i:
        times.append(d)
print("%.3f %.3f" % (statistics.median(times), min(times)))
PY
}

# peak_rss CMD... -> peak RSS in MiB of one run (/usr/bin/time), $WORK/out emptied first.
peak_rss() {
  rm -rf "$WORK/out"
  /usr/bin/time -f %M -o "$WORK/rss" "$@" > /dev/null 2>&1
  awk '{ printf "%.0f", $1 / 1024 }' "$WORK/rss"
}

# tool_venv DIR SPEC... — a venv at DIR holding exactly these pinned PyPI packages: built once,
# rebuilt when the pins change (they are recorded in DIR/.pins).
tool_venv() {
  local dir=$1
  shift
  if [[ "$(cat "$dir/.pins" 2>/dev/null)" != "$*" ]]; then
    log "installing $* into $dir"
    python3 -m venv "$dir"
    "$dir/bin/pip" install -q "$@"
    echo "$*" > "$dir/.pins"
  fi
}

# cached_wheel SPEC PATH — downloads the CPython 3.11 manylinux2014 x86_64 wheel of SPEC (a pinned
# requirement) into PATH's directory unless PATH is already there.
cached_wheel() {
  if [[ ! -f $2 ]]; then
    log "downloading $1"
    python3 -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
      --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --python-version 3.11 \
      -d "$(dirname "$2")" "$1"
  fi
}
