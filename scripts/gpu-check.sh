#!/usr/bin/env bash
# The GPU check of `cudist slim` and `cudist doctor` (issue 14): what doctor predicts for a
# kernel library on a real GPU, and what slim keeps, against what the CUDA runtime does.
#
#   scripts/gpu-check.sh prepare [DIR]       # here, no GPU needed: build everything into DIR
#   scripts/gpu-check.sh run [DIR] [OUT]     # on the GPU machine: run, compare, report into OUT
#
# DIR defaults to .cache/gpu-check (about 12 MB: carry it to the device machine with
# `run(carry=[".cache/gpu-check"], command="bash scripts/gpu-check.sh run .cache/gpu-check $OUT")`);
# OUT defaults to DIR/out.
#
# prepare builds, with nvcc 13.0 from PyPI (its PTX, ISA 9.0, JITs on every CUDA 13 driver; its
# static runtime runs on every one, by minor-version compatibility):
#   orig.so      one kernel for sm_80, sm_86 and sm_90, with compute_90 PTX (static cudart)
#   sm90.so      orig.so slimmed to sm_90 (`--ptx newest`, the default)
#   sm90-kl.so   the same with --keep-layout (removed entries zeroed, file size kept)
#   sm86-ptx.so  orig.so slimmed to sm_86 with every PTX kept: an sm_90 GPU must JIT the PTX
#   sm80.so      orig.so slimmed to sm_80 without PTX: an sm_90 GPU has nothing to run
#   new-ptx.so   the kernel built by nvcc 13.5 (PTX ISA 9.5, driver 620 or newer to JIT), slimmed
#                to sm_86 with its PTX: on an sm_90 GPU it JITs or fails, by the driver
# and a runner that dlopens one library and runs its kernel (runner.c), plus a stripped cudist.
#
# run writes, into OUT: nvidia-smi's reading, this machine's profile (doctor --write-host),
# doctor's JSON for each library, the runner's answer for each, and report.md, which sets each
# prediction beside what happened. It exits 1 when any of them disagree:
#   - doctor's driver and GPUs (name, compute capability) against nvidia-smi;
#   - for each library and GPU, doctor's status against the run: `cubin` and `jit` must run and
#     give the sum the kernel must give (and the arch doctor names); `no-kernel-image` must fail
#     with "no kernel image is available for execution on the device"; `ptx-too-new` with "the
#     provided PTX was compiled with an unsupported toolchain";
#   - the slimmed libraries give the original's answer wherever the original runs.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
cmd="${1:-}"
dir="${2:-$repo/.cache/gpu-check}"
log() { printf '[gpu-check] %s\n' "$*" >&2; }

# The nvcc wheels: (venv, pins).
NVCC_130=(nvidia-cuda-nvcc==13.0.88 nvidia-nvvm==13.0.88 nvidia-cuda-crt==13.0.88
    nvidia-cuda-runtime==13.0.96)

# nvcc's cu13 directory in a venv.
cu13() {
    local nvcc
    nvcc="$(find "$1" -path '*nvidia/cu13/bin/nvcc' -type f | head -1)"
    [[ -n "$nvcc" ]] || { log "no nvcc under $1"; exit 1; }
    echo "${nvcc%/bin/nvcc}"
}

# Builds kern.cu with the nvcc of cu13 directory $1 into $2.
build() {
    PATH="$1/bin:$1/nvvm/bin:$PATH" "$1/bin/nvcc" -shared -Xcompiler -fPIC -cudart static \
        -L"$1/lib" \
        -gencode arch=compute_80,code=sm_80 -gencode arch=compute_86,code=sm_86 \
        -gencode arch=compute_90,code='[sm_90,compute_90]' \
        -o "$2" "$here/gpu-check/kern.cu"
}

prepare() {
    local cache="${CUDIST_CACHE:-$repo/.cache}"
    [[ -x "$cache/nvcc-13.5/bin/python" ]] || bash "$repo/tests/fixtures/device/build.sh" >/dev/null
    local venv="$cache/nvcc-13.0"
    if [[ ! -x "$venv/bin/python" || "$(cat "$venv/.cudist-pins" 2>/dev/null)" != "${NVCC_130[*]}" ]]; then
        python3 -m venv "$venv"
        "$venv/bin/pip" install --quiet --disable-pip-version-check "${NVCC_130[@]}"
        echo "${NVCC_130[*]}" >"$venv/.cudist-pins"
    fi
    (cd "$repo" && cargo build --release --quiet --bin cudist)
    rm -rf "$dir"
    mkdir -p "$dir"
    cp "$repo/target/release/cudist" "$dir/cudist"
    strip "$dir/cudist"
    build "$(cu13 "$venv")" "$dir/orig.so"
    build "$(cu13 "$cache/nvcc-13.5")" "$dir/new-ptx-all.so"
    gcc -O2 -o "$dir/runner" "$here/gpu-check/runner.c" -ldl
    local c="$dir/cudist"
    "$c" slim -q "$dir/orig.so" --gpu sm_90 -o "$dir/sm90.so"
    "$c" slim -q "$dir/orig.so" --gpu sm_90 --keep-layout -o "$dir/sm90-kl.so"
    "$c" slim -q "$dir/orig.so" --gpu sm_86 --ptx keep -o "$dir/sm86-ptx.so"
    "$c" slim -q "$dir/orig.so" --gpu sm_80 --ptx drop -o "$dir/sm80.so"
    "$c" slim -q "$dir/new-ptx-all.so" --gpu sm_86 --ptx keep -o "$dir/new-ptx.so"
    rm "$dir/new-ptx-all.so"
    cp "$here/gpu-check/check.py" "$here/gpu-check/use.py" "$here/gpu-check/real.py" "$dir/"
    ls -l "$dir" >&2
    du -sh "$dir" >&2
}

run() {
    local out="${1:-$dir/out}"
    mkdir -p "$out"
    local c="$dir/cudist"
    if command -v nvidia-smi >/dev/null; then
        nvidia-smi --query-gpu=index,name,compute_cap,driver_version,memory.total \
            --format=csv,noheader >"$out/nvidia-smi.csv" 2>"$out/nvidia-smi.err" || true
        nvidia-smi >"$out/nvidia-smi.txt" 2>&1 || true
    fi
    "$c" doctor --write-host "$out/host.json" >/dev/null 2>"$out/write-host.err" || true
    for lib in orig sm90 sm90-kl sm86-ptx sm80 new-ptx; do
        "$c" doctor "$dir/$lib.so" --json >"$out/doctor-$lib.json" 2>"$out/doctor-$lib.err" || true
        "$c" inspect "$dir/$lib.so" --json >"$out/inspect-$lib.json" 2>/dev/null || true
        "$dir/runner" "$dir/$lib.so" >"$out/run-$lib.json" 2>"$out/run-$lib.err" || true
    done
    local rc=0
    python3 "$dir/check.py" "$dir" "$out" || rc=$?
    real "$out/real"
    return "$rc"
}

# doctor --import on the GPU packages the machine has installed, beside a real use of each (use.py:
# a kernel, cuBLAS, cuDNN, nvJPEG, a triton or numba.cuda kernel, an NVRTC compile), then torch
# and jax again with cuDNN's libraries moved out of the way (issue 34: JAX falls back to the CPU
# without raising). The machine is lent bare and given back, so moving them
# harms nothing. Reported in OUT/real/real.md; informative, it does not set the exit code.
real() {
    local out="$1" c="$dir/cudist" py
    py="$(command -v "${PYTHON:-python3}")"
    mkdir -p "$out"
    cp "$here/gpu-check/use.py" "$here/gpu-check/real.py" "$out/" 2>/dev/null \
        || cp "$dir/use.py" "$dir/real.py" "$out/"
    local pkgs=()
    for p in torch jax cupy torchvision torchaudio triton numba_cuda cuda.core; do
        "$py" -c "import importlib.util as u, sys; sys.exit(u.find_spec('$p') is None)" 2>/dev/null && pkgs+=("$p")
    done
    "$py" -m pip list 2>/dev/null | grep -iE '^(torch|jax|jaxlib|jax-cuda|cupy|nvidia-|triton|numba|cuda-)' >"$out/pip-list.txt" || true
    each() { # CASE PKG
        timeout 150 "$c" doctor --import "$2" --python "$py" --json >"$out/doctor-$1.json" 2>"$out/doctor-$1.err" || true
        timeout 120 "$py" "$out/use.py" "$2" >"$out/use-$1.json" 2>"$out/use-$1.err" || true
    }
    for p in "${pkgs[@]}"; do each "$p" "$p"; done
    # cuDNN moved away: every libcudnn under the interpreter's site directories.
    local hide=/tmp/gpu-check-hidden-cudnn
    mkdir -p "$hide"
    {
        "$py" -c 'import site; print("\n".join(site.getsitepackages()))' | while read -r sp; do
            find "$sp" -name 'libcudnn*.so*' 2>/dev/null
        done
        ldconfig -p | sed -n 's/.*=> //p' | grep -i cudnn
    } | sort -u >"$out/cudnn-moved.txt" || true
    while read -r f; do
        if [[ -f "$f" ]]; then mv "$f" "$hide/" || true; fi
    done <"$out/cudnn-moved.txt"
    for p in "${pkgs[@]}"; do
        case "$p" in torch | jax) each "$p-without-cudnn" "$p" ;; esac
    done
    "$py" "$out/real.py" "$out" || true
}

case "$cmd" in
    prepare) prepare ;;
    run) run "${3:-}" ;;
    *)
        sed -n '2,9p' "${BASH_SOURCE[0]}" >&2
        exit 2
        ;;
esac
