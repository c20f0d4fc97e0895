#!/usr/bin/env bash
# Builds the fuzz targets with the stable toolchain and runs them, each for a fixed time.
#
#   fuzz/run.sh [SECONDS] [TARGET…]     # default: 20 s each, every target
#
# cargo-fuzz needs nightly for its sanitizer flags; libFuzzer itself does not. The targets are
# built here with the coverage instrumentation libFuzzer needs, which stable rustc accepts as -C
# flags, for the host triple (so build scripts and proc-macros are not instrumented), without
# AddressSanitizer: Rust's own bounds checks, debug assertions and overflow checks stand in for
# it. CI runs every target for 20 s (.ci/run); longer runs use the same script:
#
#   fuzz/run.sh 600 wheel               # ten minutes of the wheel reader
#
# Each run prints libFuzzer's final line (executions, rate) and fails on a crash, leaving the
# input in fuzz/artifacts/<target>/. Seeds come from fuzz/seed.sh (run here when a corpus is
# missing); new interesting inputs accumulate in fuzz/corpus/<target>/ (ignored by git).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
secs="${1:-20}"
shift || true
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=(wheel conda elf_patch elf fatbin python index)

triple="$(rustc -vV | sed -n 's/^host: //p')"
export RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing -Cdebug-assertions -Coverflow-checks"
target_dir="${CARGO_TARGET_DIR:-$here/../target}/fuzz"
CARGO_TARGET_DIR="$target_dir" cargo build --quiet --manifest-path "$here/Cargo.toml" \
    --release --target "$triple" --bins
[[ -d "$here/corpus/wheel" && -d "$here/corpus/conda" && -d "$here/corpus/python" && -d "$here/corpus/index" ]] || bash "$here/seed.sh" >/dev/null

status=0
for t in "${targets[@]}"; do
    mkdir -p "$here/corpus/$t" "$here/artifacts/$t"
    log="$(mktemp)"
    if "$target_dir/$triple/release/$t" "$here/corpus/$t" \
        -max_total_time="$secs" -rss_limit_mb=2048 -timeout=20 -max_len=1048576 \
        -artifact_prefix="$here/artifacts/$t/" -print_final_stats=1 >"$log" 2>&1; then
        runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")"
        rate="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")"
        echo "fuzz $t: ${runs:-?} executions in ${secs} s (${rate:-?}/s), no crash"
    else
        echo "fuzz $t: FAILED (input kept in fuzz/artifacts/$t/)"
        tail -40 "$log"
        status=1
    fi
    rm -f "$log"
done
exit $status
