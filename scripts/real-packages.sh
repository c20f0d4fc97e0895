#!/usr/bin/env bash
# The real-package suite: install real CUDA-using packages from PyPI, each with its dependencies,
# into its own venv, and compare what really happens on `import` with what `cudist doctor` says.
#
#   scripts/real-packages.sh                # every subject
#   scripts/real-packages.sh faiss onnxruntime   # only these subjects (names from SUBJECTS below)
#
# Environment: CUDIST (default target/release/cudist, else target/debug/cudist), CUDIST_CACHE
# (default .cache), PYTHON (default python3.11), MIN_FREE_GB (default 12: a subject is skipped,
# with a 'skipped: disk' line, when installing it would leave less free space on the cache's disk),
# FORCE=1 (recreate venvs that already hold the pin).
#
# What it downloads and installs (wheels only, --only-binary=:all:, CPython 3.11, x86_64; measured
# with pip 23.2.1 on a 2-core machine; each wheel is deleted right after it is installed):
#   - faiss: faiss-gpu-cu12==1.14.1.post1 + numpy, packaging, nvidia-cublas-cu12,
#     nvidia-cuda-runtime-cu12, nvidia-cuda-nvrtc-cu12: 706 MB of wheels, venv 1249 MB, 30-50 s.
#   - onnxruntime: onnxruntime-gpu[cuda,cudnn]==1.31.1 + numpy, protobuf, flatbuffers, packaging and
#     CUDA 13 wheels (nvidia-cuda-runtime, -cuda-nvrtc, -cublas, -cufft, -curand, -nvjitlink,
#     nvidia-cudnn-cu13): 1511 MB of wheels, venv 2513 MB, 50-80 s.
#   - bitsandbytes: bitsandbytes==0.50.2 (a manylinux_2_24 wheel) + torch 2.15.0 with its CUDA 13
#     wheels (cudnn, cublas, cusparselt, nccl, nvshmem, cufft, cusolver, cusparse, cupti, nvrtc,
#     cufile, nvtx, nvjitlink, cccl, cuda-bindings, cuda-toolkit) and triton: 32 wheels, 2919 MB
#     (torch 514, cudnn 495, cublas 386, triton 273, cusolver 217, cufft 208, nccl 206, ...);
#     venv 5610 MB, 231 s.
#   - torch: torch==2.15.0 (torch-2.15.0-cp311-cp311-manylinux_2_28_x86_64.whl, 539 MB, the CUDA 13
#     build PyPI serves for Linux x86_64) with the same CUDA 13 wheels and triton as bitsandbytes
#     above, in a venv of its own: venv 5413 MB, 194 s.
#   - the repair checks download the subject's own wheel once more (no dependencies; taken from
#     $CUDIST_CACHE/real/wheels/ when it is there) and write the repaired copy next to it: about
#     twice the wheel, removed after the checks. Their throwaway venv holds only pip, but its
#     `--dry-run` downloads every dependency's wheel into TMPDIR for the resolve (pip 23.2.1 here
#     read no separate metadata): ~0.5 GB for onnxruntime, ~3 GB for bitsandbytes and torch, gone
#     when pip exits.
# The venvs are kept and reused (FORCE=1 reinstalls); delete $CUDIST_CACHE/real to reclaim the space.
#
# Layout under $CUDIST_CACHE/real/: venvs/<name>/ (one venv per subject), tmp/ (TMPDIR for pip),
# logs/<name>.* (pip's resolve report and log, each check's output, doctor's JSON, LD_DEBUG), and
# results.tsv: one line per check, "subject<TAB>check<TAB>outcome". Running some subjects replaces
# only their lines. Checks, per subject:
#   install / install_seconds / venv_mb   how the install went ('skipped: disk ...' when it would
#                               leave less than MIN_FREE_GB free);
#   import                      `python -c "import X"`: ok, or the first line of the error;
#   doctor                      `cudist doctor --import X --python venv/bin/python --json`: verdict.status;
#   use                         a snippet that reaches the CUDA part (see SUBJECTS): ok or the error;
#   import_preload_off          the import with the package's own preload switch set, where it has one;
#   ld_init_count / ld_cuda_libs   LD_DEBUG=libs on the import: how many `calling init` lines, and
#                               which CUDA .so files were initialised (logs/<name>.ld_debug.log);
#   import_nvidia_off / doctor_nvidia_off   import and doctor with site-packages/nvidia moved to
#                               nvidia.off (moved back afterwards, by the EXIT trap too);
#   wheel_off:<dist>            each CUDA wheel installed in the venv (a distribution named
#                               nvidia-*, or *-cuNN, other than the subject's own) taken away in
#                               turn: the shared libraries its RECORD lists moved aside (back
#                               afterwards, by the EXIT trap too), then the import and doctor:
#                               "import <outcome>; doctor <status>; agree|DISAGREE; N new
#                               reason(s), naming|not naming a moved library", where they
#                               agree when the import fails exactly when doctor says
#                               will-fail-to-load, and the reasons the healthy run did not give
#                               say whether doctor saw the removal at all
#                               (logs/<name>.wheel_off.<dist>.*);
#   pip_dry_run                 `pip install --dry-run --quiet --only-binary=:all: <pin>` in the venv;
#   repair                      `cudist repair <wheel> -w <dir>` on the subject's own wheel, as a user
#                               would get it (`pip download --no-deps --only-binary=:all: <pin>`):
#                               "exit N; added K: <Requires-Dist lines the repaired METADATA has and
#                               the original lacks>" (and "removed M: ..." if any went), or why no
#                               wheel came out (logs/<name>.repair.log, .repair.requires);
#   repair_dry_run              `pip install --dry-run --only-binary=:all: <repaired wheel>` in a fresh
#                               venv (removed afterwards): "ok (would install N)", or pip's first
#                               ERROR line (logs/<name>.repair_dry_run.log);
#   loader_target               where the package has a preload switch: the original wheel and a
#                               `repair --loader` copy installed with `pip --target` into trees of
#                               their own, the NVIDIA wheels left in the venv, the switch set: the
#                               import of each ("original: ...; repaired: ...");
#   repair_import               the repaired wheel installed over the package in the subject's venv
#                               (`pip install --no-deps --force-reinstall`), then the import; the
#                               original pin is reinstalled the same way from the downloaded wheel
#                               afterwards (by the EXIT trap too), so the venv is left as it was;
#   seconds                     how long the subject took, install and every check included.
# Doctor's verdict is recorded as it is, right or wrong: comparing it with `import` is the point.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
CACHE="${CUDIST_CACHE:-.cache}"
REAL="$CACHE/real"
RESULTS="$REAL/results.tsv"
LOGS="$REAL/logs"
PYTHON="${PYTHON:-python3.11}"
MIN_FREE_GB="${MIN_FREE_GB:-12}"
if [[ -z "${CUDIST:-}" ]]; then
  if [[ -x target/release/cudist ]]; then CUDIST=target/release/cudist; else CUDIST=target/debug/cudist; fi
fi
CUDIST="$(cd "$(dirname "$CUDIST")" && pwd)/$(basename "$CUDIST")"
mkdir -p "$REAL/venvs" "$REAL/tmp" "$LOGS"
REAL="$(cd "$REAL" && pwd)"; RESULTS="$REAL/results.tsv"; LOGS="$REAL/logs"
export TMPDIR="$REAL/tmp" PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
log() { printf '[real-packages] %s\n' "$*" >&2; }

# name|pip requirement|module to import|estimated peak disk use in MB (the installed venv plus
# its largest wheel, measured)|environment switch that turns the package's own preload of the
# NVIDIA wheels off ("" for none)|Python that reaches the CUDA part (its last stdout line is kept)
SUBJECTS=(
  "faiss|faiss-gpu-cu12==1.14.1.post1|faiss|1800|_FAISS_WHEEL_DISABLE_CUDA_PRELOAD=1|import faiss; print('gpus', faiss.get_num_gpus())"
  "onnxruntime|onnxruntime-gpu[cuda,cudnn]==1.31.1|onnxruntime|3000||import onnxruntime as o, ctypes; o.preload_dlls(directory=''); ctypes.CDLL(o.__path__[0] + '/capi/libonnxruntime_providers_cuda.so'); print(o.get_available_providers())"
  "bitsandbytes|bitsandbytes==0.50.2|bitsandbytes|6500||import torch, bitsandbytes; print('cuda', torch.cuda.is_available())"
  "torch|torch==2.15.0|torch|6500||import torch; print('cuda', torch.cuda.is_available(), torch.version.cuda)"
  # The wheels issue 34 measured (2026-11-26), each with its real dependencies; estimates from
  # the wheels' sizes (a subject that would leave less than MIN_FREE_GB is skipped, and says so).
  "cupy13|cupy-cuda13x[ctk]==14.2.0|cupy|3500||import cupy, cupyx.scipy; print(cupy.__version__)"
  "ctranslate2|ctranslate2==4.8.5|ctranslate2|600||import ctranslate2; print('cuda devices', ctranslate2.get_cuda_device_count())"
  "warp|warp-lang==1.19.0|warp|800||import warp as wp; wp.init(); print('cuda devices', wp.get_cuda_device_count())"
  "catboost|catboost==1.2.10|catboost|1200||import catboost; print(catboost.__version__)"
  "custatevec|custatevec-cu12==1.15.0|custatevec|2500||import custatevec; print(custatevec.get_version())"
  "nvmath|nvmath-python[cu13]==1.0.0|nvmath|4000||import nvmath; print(nvmath.__version__)"
  "triton|triton==3.9.0|triton|1500||import triton; print(triton.__version__)"
  "spconv|spconv-cu120==2.3.6|spconv|1500||import spconv; print(spconv.__version__)"
  "jax13|jax[cuda13]==0.10.2|jax|5000||import jax; print(jax.devices())"
  "mlx-cuda|mlx[cuda]==0.30.0|mlx.core|2000||import mlx.core as mx; print(mx.default_device())"
  "torchvision|torchvision==0.29.2|torchvision|6500||import torch, torchvision.io as io; x = io.encode_jpeg(torch.zeros(3, 8, 8, dtype=torch.uint8)); print(tuple(io.decode_jpeg(x).shape))"
  "xformers|xformers==0.0.35|xformers|6500||import xformers.ops; print('ok')"
  "sgl-kernel|sgl-kernel==0.3.21|sgl_kernel|7000||import sgl_kernel; print('ok')"
)

free_mb() { df -Pm "$REAL" | awk 'NR==2 {print $4}'; }

declare -a ROWS=()
record() { # subject check outcome (tabs/newlines in the outcome become spaces)
  local out="${3//$'\t'/ }"; out="${out//$'\n'/ }"
  ROWS+=("$1"$'\t'"$2"$'\t'"$out")
  printf '  %-14s %-20s %s\n' "$1" "$2" "$out" >&2
}
flush() { # replace this subject's lines in results.tsv
  local subject="$1" tmp="$RESULTS.tmp"
  touch "$RESULTS"
  awk -F'\t' -v s="$subject" '$1 != s' "$RESULTS" > "$tmp"
  local row; for row in "${ROWS[@]}"; do printf '%s\n' "$row" >> "$tmp"; done
  mv "$tmp" "$RESULTS"
  ROWS=()
}

# Run Python code: "ok" (with its last stdout line, if any), or the first line of the error: the
# exception line of the traceback, else the last line of output.
py_outcome() { # python code VAR=value|"" logfile
  local rc=0 out line
  env ${3:+"$3"} "$1" -c "$2" > "$4.stdout" 2> "$4" || rc=$?
  out="$(tail -n1 "$4.stdout")"; cat "$4.stdout" >> "$4"; rm -f "$4.stdout"
  if [[ $rc -eq 0 ]]; then echo "ok${out:+ ($out)}"; return; fi
  line="$(grep -E '^[A-Za-z_][A-Za-z0-9_.]*(Error|Exception|Exit)\b' "$4" | tail -n1 || true)"
  [[ -n "$line" ]] || line="$(grep -v '^[[:space:]]*$' "$4" | tail -n1 || true)"
  echo "${line:-exit $rc}"
}
import_outcome() { py_outcome "$1" "import $2" "" "$3"; }

doctor_outcome() { # python module logfile
  "$CUDIST" doctor --import "$2" --python "$1" --json > "$3" 2> "$3.stderr" || true
  python3 - "$3" "$3.stderr" <<'EOF'
import json, sys
try:
    print(json.load(open(sys.argv[1]))["verdict"]["status"])
except Exception as e:
    err = open(sys.argv[2]).read().strip().splitlines()
    # A panic's first line says where; the second says what.
    print("error: " + (" ".join(err[:2]) if err and "panicked" in err[0] else
                       err[0] if err else f"{type(e).__name__}: {e}"))
EOF
}

# Move the shared libraries one installed distribution's RECORD lists out of site-packages, or
# back: wheel_files off|on SITE DIST AWAY. The moves are listed in AWAY/moved, so that `on` (and
# the EXIT trap) undoes exactly what `off` did. Paths outside SITE are never touched.
wheel_files() {
  python3 - "$@" <<'EOF'
import csv, os, re, sys
op, site, dist, away = sys.argv[1:5]
site = os.path.realpath(site)
norm = lambda n: re.sub(r"[-_.]+", "-", n).lower()
manifest = os.path.join(away, "moved")
if op == "on":
    if os.path.exists(manifest):
        for rel in open(manifest).read().splitlines():
            src, dst = os.path.join(away, "files", rel), os.path.join(site, rel)
            if os.path.lexists(src) and not os.path.lexists(dst):
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                os.rename(src, dst)
        os.remove(manifest)
    sys.exit(0)
for d in os.listdir(site):
    if not d.endswith(".dist-info"):
        continue
    meta = os.path.join(site, d, "METADATA")
    name = next((l.split(":", 1)[1].strip() for l in open(meta, errors="replace")
                 if l.startswith("Name:")), "") if os.path.exists(meta) else ""
    if norm(name) != norm(dist):
        continue
    moved = []
    for row in csv.reader(open(os.path.join(site, d, "RECORD"), errors="replace")):
        rel = row[0] if row else ""
        full = os.path.realpath(os.path.join(site, rel))
        if not full.startswith(site + os.sep) or not re.search(r"\.so(\.|$)", rel):
            continue
        if os.path.isfile(full):
            rel = os.path.relpath(full, site)
            os.makedirs(os.path.dirname(os.path.join(away, "files", rel)), exist_ok=True)
            os.rename(full, os.path.join(away, "files", rel))
            moved.append(rel)
            with open(manifest, "a") as m:
                m.write(rel + "\n")
    print(len(moved))
    break
EOF
}
# The CUDA wheels installed in SITE: distributions named nvidia-*, or with a name part cuNN,
# cuNNN, cuNNx or cudaNN (cumm-cu120, jax-cuda13-plugin, mlx-cuda), other than
# the subject's own (DIST), that list shared libraries.
cuda_wheels() { # site dist
  python3 - "$1" "$2" <<'EOF'
import os, re, sys
site, own = sys.argv[1], re.sub(r"[-_.]+", "-", sys.argv[2]).lower()
out = set()
for d in os.listdir(site):
    if not d.endswith(".dist-info"):
        continue
    name = re.sub(r"[-_.]+", "-", d[: -len(".dist-info")].rsplit("-", 1)[0]).lower()
    if name == own or not (name.startswith("nvidia-") or re.search(r"(^|-)(cu\d{2,3}x?|cuda\d*x?)(-|$)", name)):
        continue
    record = os.path.join(site, d, "RECORD")
    if os.path.exists(record) and re.search(r"\.so(\.|,)", open(record, errors="replace").read()):
        out.add(name)
print("\n".join(sorted(out)))
EOF
}
WHEEL_OFF="" WHEEL_SITE="" WHEEL_DIST=""
restore_wheel() {
  if [[ -n "$WHEEL_OFF" ]]; then wheel_files on "$WHEEL_SITE" "$WHEEL_DIST" "$WHEEL_OFF"; rm -rf "$WHEEL_OFF"; fi
  WHEEL_OFF=""
}

NVIDIA_DIR=""
restore_nvidia() {
  if [[ -n "$NVIDIA_DIR" && -d "$NVIDIA_DIR.off" && ! -e "$NVIDIA_DIR" ]]; then
    mv "$NVIDIA_DIR.off" "$NVIDIA_DIR"
  fi
  NVIDIA_DIR=""
}
# The repair checks. REPAIR_DIR holds in/ (the subject's own wheel, downloaded), out/ (the repaired
# wheel) and venv/ (the throwaway venv); ORIG_WHEEL and REPAIRED are the two wheels ("" when absent).
REPAIR_DIR="" ORIG_WHEEL="" REPAIRED="" RESTORE_PIP="" RESTORE_PIN=""

# Put the original pin back over a repaired install (from the downloaded wheel, offline).
restore_original() {
  [[ -n "$RESTORE_PIP" ]] || return 0
  local rc=0
  "$RESTORE_PIP" install --no-deps --force-reinstall --no-index --only-binary=:all: \
    --find-links "$REPAIR_DIR/in" "$RESTORE_PIN" >> "$REPAIR_DIR/restore.log" 2>&1 || rc=$?
  RESTORE_PIP="" RESTORE_PIN=""
  return $rc
}
cleanup_repair() {
  restore_original || true
  [[ -z "$REPAIR_DIR" ]] || rm -rf "$REPAIR_DIR"
  REPAIR_DIR="" ORIG_WHEEL="" REPAIRED=""
}
trap 'restore_nvidia; restore_wheel; cleanup_repair' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# repair: get the subject's wheel as a user would (pip download, no dependencies; from the wheels
# cached under $REAL/wheels when pip finds it there), repair it, and compare the Requires-Dist lines.
check_repair() { # name pin pip
  local name="$1" pin="$2" pip="$3" log="$LOGS/$1.repair.log" rc=0 t0
  REPAIR_DIR="$REAL/tmp/repair.$name"
  rm -rf "$REPAIR_DIR"; mkdir -p "$REPAIR_DIR/in"
  if ! "$pip" download --no-deps --only-binary=:all: --no-index --find-links "$REAL/wheels" \
         -d "$REPAIR_DIR/in" "$pin" > "$log" 2>&1 \
     && ! "$pip" download --no-deps --only-binary=:all: -d "$REPAIR_DIR/in" "$pin" >> "$log" 2>&1; then
    record "$name" repair "fail: pip download ($(tail -n1 "$log"))"; return
  fi
  ORIG_WHEEL="$(find "$REPAIR_DIR/in" -name '*.whl' | head -n1)"
  [[ -n "$ORIG_WHEEL" ]] || { record "$name" repair "fail: pip download gave no wheel"; return; }
  local wheel_mb; wheel_mb="$(du -m "$ORIG_WHEEL" | cut -f1)"
  if (( $(free_mb) - 3 * wheel_mb < MIN_FREE_GB * 1024 )); then
    record "$name" repair "skipped: disk ($(free_mb) MB free, ~$((3 * wheel_mb)) MB needed, floor ${MIN_FREE_GB} GB)"
    return
  fi
  echo "# $CUDIST repair ${ORIG_WHEEL##*/} -w out/" >> "$log"
  t0=$SECONDS
  "$CUDIST" repair "$ORIG_WHEEL" -w "$REPAIR_DIR/out" >> "$log" 2>&1 || rc=$?
  echo "# exit $rc after $((SECONDS - t0)) s" >> "$log"
  REPAIRED="$(find "$REPAIR_DIR/out" -name '*.whl' 2>/dev/null | head -n1 || true)"
  if [[ -z "$REPAIRED" ]]; then # cudist's first error line (a panic's two), after pip's output
    record "$name" repair "exit $rc; no wheel: $(awk '/^# .* repair /{on=1; next}
      on && p {print; exit} on && /panicked at/ {printf "%s ", $0; p=1; next}
      on && /^error/ {print; exit}' "$log")"
    return
  fi
  python3 - "$ORIG_WHEEL" "$REPAIRED" > "$LOGS/$name.repair.requires" <<'EOF'
import email.parser, sys, zipfile
def requires(path):
    with zipfile.ZipFile(path) as z:
        meta = [n for n in z.namelist() if n.count("/") == 1 and n.endswith(".dist-info/METADATA")]
        msg = email.parser.BytesParser().parsebytes(z.read(meta[0]), headersonly=True)
    return msg.get_all("Requires-Dist") or []
before, after = requires(sys.argv[1]), requires(sys.argv[2])
print(f"# {sys.argv[1].rsplit('/', 1)[-1]} -> {sys.argv[2].rsplit('/', 1)[-1]}")
for r in after:
    if r not in before: print("+ " + r)
for r in before:
    if r not in after: print("- " + r)
EOF
  local req="$LOGS/$name.repair.requires" out
  out="exit $rc; ${REPAIRED##*/}; added $(grep -c '^+ ' "$req" || true)"
  if grep -q '^+ ' "$req"; then out+=": $(sed -n 's/^+ //p' "$req" | paste -sd'|' - | sed 's/|/, /g')"; fi
  if grep -q '^- ' "$req"; then
    out+="; removed $(grep -c '^- ' "$req"): $(sed -n 's/^- //p' "$req" | paste -sd'|' - | sed 's/|/, /g')"
  fi
  record "$name" repair "$out"
}

# repair_dry_run: would pip install the repaired wheel, with its dependencies, into a fresh venv?
check_repair_dry_run() { # name
  local name="$1" log="$LOGS/$1.repair_dry_run.log" venv="$REPAIR_DIR/venv" n
  if [[ -z "$REPAIRED" ]]; then record "$name" repair_dry_run "n/a: no repaired wheel"; return; fi
  "$PYTHON" -m venv "$venv"
  if "$venv/bin/pip" install --dry-run --only-binary=:all: "$REPAIRED" > "$log" 2>&1; then
    n="$(sed -n 's/^Would install //p' "$log" | wc -w)"
    record "$name" repair_dry_run "ok (would install $n)"
  else
    record "$name" repair_dry_run "fail: $(grep -m1 '^ERROR' "$log" || tail -n1 "$log")"
  fi
  rm -rf "$venv"
}

# repair_import: the repaired wheel over the package in the subject's venv, the import, and the
# original pin put back.
check_repair_import() { # name pin pip py module
  local name="$1" pin="$2" pip="$3" py="$4" module="$5" log="$LOGS/$1.repair_import.log" out
  if [[ -z "$REPAIRED" ]]; then record "$name" repair_import "n/a: no repaired wheel"; return; fi
  RESTORE_PIP="$pip" RESTORE_PIN="$pin"
  if "$pip" install --no-deps --force-reinstall "$REPAIRED" > "$log.pip" 2>&1; then
    out="$(import_outcome "$py" "$module" "$log")"
  else
    out="fail: pip install ($(tail -n1 "$log.pip"))"
  fi
  if ! restore_original; then out+="; restoring $pin FAILED (see $log.pip)"; fi
  cat "$REPAIR_DIR/restore.log" >> "$log.pip" 2>/dev/null || true
  record "$name" repair_import "$out"
}

# loader_target: the original wheel and a `repair --loader` copy, each installed with `pip install
# --target` into a tree of its own, the NVIDIA wheels left in the venv (on sys.path, outside that
# tree: $ORIGIN/.. misses them), the package's own preload switched off:
# "original: <import outcome>; repaired: <import outcome>".
check_loader_target() { # name pip py module switch
  local name="$1" pip="$2" py="$3" module="$4" switch="$5" d log="$LOGS/$1.loader_target.log" o r
  if [[ -z "$switch" || -z "$ORIG_WHEEL" ]]; then record "$name" loader_target "n/a"; return; fi
  d="$REPAIR_DIR/loader"; mkdir -p "$d"
  if ! "$CUDIST" repair --loader "$ORIG_WHEEL" -w "$d/out" > "$log" 2>&1; then
    record "$name" loader_target "fail: repair --loader ($(tail -n1 "$log"))"; return
  fi
  "$pip" install --quiet --no-deps --target "$d/orig" "$ORIG_WHEEL" >> "$log" 2>&1
  "$pip" install --quiet --no-deps --target "$d/rep" "$d"/out/*.whl >> "$log" 2>&1
  o="$(cd "$d" && PYTHONPATH="$d/orig" py_outcome "$py" "import $module" "$switch" "$log.orig")"
  r="$(cd "$d" && PYTHONPATH="$d/rep" py_outcome "$py" "import $module" "$switch" "$log.rep")"
  record "$name" loader_target "original: $o; repaired: $r [$switch]"
}

run_subject() {
  local name="$1" pin="$2" module="$3" est_mb="$4" switch="$5" use="$6"
  local venv="$REAL/venvs/$name" py pip
  py="$venv/bin/python"; pip="$venv/bin/pip"
  local t_subject=$SECONDS
  log "== $name ($pin)"
  rm -f "$LOGS/$name".*

  local have=0
  if [[ -z "${FORCE:-}" && -x "$py" ]] && "$pip" show --quiet "${pin%%[\[=]*}" >/dev/null 2>&1 \
     && [[ "$("$py" -c "import importlib.metadata as m; print(m.version('${pin%%[\[=]*}'))" 2>/dev/null)" == "${pin##*==}" ]]; then
    have=1
  fi

  if [[ $have -eq 1 ]]; then
    record "$name" install "ok (cached venv)"
  else
    rm -rf "$venv"
    local free; free="$(free_mb)"
    if (( free - est_mb < MIN_FREE_GB * 1024 )); then
      record "$name" install "skipped: disk (${free} MB free, ~${est_mb} MB needed, floor ${MIN_FREE_GB} GB)"
      flush "$name"; return
    fi
    local t0=$SECONDS
    "$PYTHON" -m venv "$venv"
    # Resolve once (pip reads the wheels' metadata, downloads nothing), then install the resolved
    # wheels one at a time with --no-deps, so that at most one downloaded wheel is on disk at once:
    # the peak is the venv plus the largest wheel, not the venv plus every wheel.
    if ! "$pip" install --dry-run --quiet --only-binary=:all: --report "$LOGS/$name.resolve.json" "$pin" \
        > "$LOGS/$name.install.log" 2>&1; then
      record "$name" install "fail: resolve ($(tail -n1 "$LOGS/$name.install.log"))"
      flush "$name"; return
    fi
    local url
    while IFS= read -r url; do
      free="$(free_mb)"
      if (( free < MIN_FREE_GB * 1024 )); then
        record "$name" install "skipped: disk (fell to ${free} MB free while installing; venv removed)"
        rm -rf "$venv"; flush "$name"; return
      fi
      if ! "$pip" install --no-deps --only-binary=:all: "$url" >> "$LOGS/$name.install.log" 2>&1; then
        record "$name" install "fail: ${url##*/} ($(tail -n1 "$LOGS/$name.install.log"))"
        flush "$name"; return
      fi
    done < <(python3 -c '
import json, sys
for i in json.load(open(sys.argv[1]))["install"]:
    d = i["download_info"]; h = d.get("archive_info", {}).get("hashes", {}).get("sha256")
    print(d["url"] + (f"#sha256={h}" if h else ""))' "$LOGS/$name.resolve.json")
    # The whole requirement again, offline: everything must already be satisfied and consistent.
    if ! "$pip" install --no-index --only-binary=:all: "$pin" >> "$LOGS/$name.install.log" 2>&1 \
       || ! "$pip" check >> "$LOGS/$name.install.log" 2>&1; then
      record "$name" install "fail: $(tail -n1 "$LOGS/$name.install.log")"
      flush "$name"; return
    fi
    record "$name" install ok
    record "$name" install_seconds "$((SECONDS - t0))"
  fi
  record "$name" venv_mb "$(du -sm "$venv" | cut -f1)"

  local site; site="$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"

  # 1 and 3: as installed.
  record "$name" import "$(import_outcome "$py" "$module" "$LOGS/$name.import.log")"
  record "$name" doctor "$(doctor_outcome "$py" "$module" "$LOGS/$name.doctor.json")"
  record "$name" use "$(py_outcome "$py" "$use" "" "$LOGS/$name.use.log")"
  if [[ -n "$switch" ]]; then
    record "$name" "import_preload_off" "$(py_outcome "$py" "import $module" "$switch" "$LOGS/$name.import_preload_off.log") [$switch]"
  fi

  # LD_DEBUG: every `calling init`, and the CUDA libraries among them.
  LD_DEBUG=libs "$py" -c "import $module" > "$LOGS/$name.ld_debug.full.log" 2>&1 || true
  {
    echo "# LD_DEBUG=libs $py -c 'import $module'"
    echo "calling init lines: $(grep -c 'calling init' "$LOGS/$name.ld_debug.full.log" || true)"
    echo "CUDA libraries initialised:"
    grep -o 'calling init: [^ ]*' "$LOGS/$name.ld_debug.full.log" \
      | grep -i -E 'cuda|cublas|cudnn|nvrtc|curand|cufft' || true
  } > "$LOGS/$name.ld_debug.log"
  gzip -f "$LOGS/$name.ld_debug.full.log"
  record "$name" ld_init_count "$(sed -n 's/^calling init lines: //p' "$LOGS/$name.ld_debug.log")"
  record "$name" ld_cuda_libs "$(sed -n '/^CUDA libraries initialised:/,$p' "$LOGS/$name.ld_debug.log" \
    | tail -n +2 | sed 's/^calling init: //; s#.*/##' | paste -sd, - | sed 's/^$/none/')"

  # 2 and 3 again with the NVIDIA wheels moved away (always moved back, by the trap too).
  if [[ -d "$site/nvidia" ]]; then
    NVIDIA_DIR="$site/nvidia"
    mv "$NVIDIA_DIR" "$NVIDIA_DIR.off"
    record "$name" import_nvidia_off "$(import_outcome "$py" "$module" "$LOGS/$name.import_nvidia_off.log")"
    record "$name" doctor_nvidia_off "$(doctor_outcome "$py" "$module" "$LOGS/$name.doctor_nvidia_off.json")"
    restore_nvidia
  else
    record "$name" import_nvidia_off "n/a: no site-packages/nvidia"
    record "$name" doctor_nvidia_off "n/a: no site-packages/nvidia"
  fi

  # Each CUDA wheel taken away in turn: does doctor say what the import does?
  local w n imp doc agree
  while IFS= read -r w; do
    [[ -n "$w" ]] || continue
    WHEEL_SITE="$site" WHEEL_DIST="$w" WHEEL_OFF="$REAL/tmp/wheel_off.$name"
    rm -rf "$WHEEL_OFF"; mkdir -p "$WHEEL_OFF"
    n="$(wheel_files off "$site" "$w" "$WHEEL_OFF")"
    imp="$(import_outcome "$py" "$module" "$LOGS/$name.wheel_off.$w.import.log")"
    doc="$(doctor_outcome "$py" "$module" "$LOGS/$name.wheel_off.$w.doctor.json")"
    # What the removal changed in doctor's answer: the reasons the healthy run did not give, and
    # whether one of them names a library that was moved away (a removal doctor is silent on,
    # where the import works, is said as such: on a machine without a driver the status alone
    # says little).
    said="$(python3 - "$LOGS/$name.doctor.json" "$LOGS/$name.wheel_off.$w.doctor.json" "$WHEEL_OFF/moved" <<'EOF'
import json, os, sys
def reasons(p):
    try:
        return set(json.load(open(p))["verdict"]["reasons"])
    except Exception:
        return set()
new = reasons(sys.argv[2]) - reasons(sys.argv[1])
try:
    names = {os.path.basename(l.strip()) for l in open(sys.argv[3]) if l.strip()}
except OSError:
    names = set()
# A moved file is named by its stem up to `.so` (libcublas.so.13.1.0.3 is asked for as
# libcublas.so.13).
stems = {n.split(".so")[0] + ".so" for n in names if ".so" in n}
named = any(s in r for r in new for s in stems)
print(f"{len(new)} new reason(s), {'naming' if named else 'not naming'} a moved library")
EOF
)"
    restore_wheel
    agree=DISAGREE
    if [[ "$imp" == ok* && "$doc" != will-fail-to-load && "$doc" != error* ]] \
       || [[ "$imp" != ok* && "$doc" == will-fail-to-load ]]; then agree=agree; fi
    record "$name" "wheel_off:$w" "import ${imp:0:120}; doctor $doc; $agree; $said (${n:-0} files moved)"
  done < <(cuda_wheels "$site" "${pin%%[\[=]*}")

  # 4: does pip still resolve the pin here?
  if "$pip" install --dry-run --quiet --only-binary=:all: "$pin" > "$LOGS/$name.dry_run.log" 2>&1; then
    record "$name" pip_dry_run ok
  else
    record "$name" pip_dry_run "fail: $(tail -n1 "$LOGS/$name.dry_run.log")"
  fi

  # 5: cudist repair on the subject's own wheel, and what pip and the import make of the result.
  check_repair "$name" "$pin" "$pip"
  check_repair_dry_run "$name"
  check_repair_import "$name" "$pin" "$pip" "$py" "$module"
  check_loader_target "$name" "$pip" "$py" "$module" "$switch"
  cleanup_repair

  record "$name" seconds "$((SECONDS - t_subject))"
  flush "$name"
}

[[ -x "$CUDIST" ]] || { log "no cudist binary at $CUDIST (set CUDIST)"; exit 2; }
"$PYTHON" -c 'import sys; assert sys.version_info[:2] == (3, 11), sys.version' \
  || { log "$PYTHON is not Python 3.11 (set PYTHON)"; exit 2; }
log "cudist: $CUDIST; cache: $REAL; $(free_mb) MB free"

wanted=("$@")
found=0
for s in "${SUBJECTS[@]}"; do
  IFS='|' read -r name pin module est switch use <<< "$s"
  if [[ ${#wanted[@]} -gt 0 ]]; then
    match=0; for w in "${wanted[@]}"; do [[ "$w" == "$name" ]] && match=1; done
    [[ $match -eq 1 ]] || continue
  fi
  found=$((found + 1))
  run_subject "$name" "$pin" "$module" "$est" "$switch" "$use"
done
[[ $found -gt 0 ]] || { log "no such subject: $* (have: $(printf '%s\n' "${SUBJECTS[@]}" | cut -d'|' -f1 | paste -sd' ' -))"; exit 2; }
log "results: $RESULTS"
column -t -s$'\t' "$RESULTS" >&2 || cat "$RESULTS" >&2
