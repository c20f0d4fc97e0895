"""Sets what cudist predicted beside what happened on a real GPU (scripts/gpu-check.sh run).

    python3 check.py DIR OUT

Reads OUT/nvidia-smi.csv, OUT/host.json (doctor --write-host), and for each library
OUT/doctor-LIB.json and OUT/run-LIB.json; writes OUT/report.md and OUT/report.json; exits 1
when any prediction disagrees with what happened (or nothing could be compared).
"""

import json
import re
import sys
from pathlib import Path

LIBS = ["orig", "sm90", "sm90-kl", "sm86-ptx", "sm80", "new-ptx"]
N = 1 << 20
# What the kernel sums: (i % 1000)^2 over its N threads.
EXPECTED_SUM = sum((i % 1000) ** 2 for i in range(N))
# cudaGetErrorString's texts for the failures doctor names.
NO_KERNEL_IMAGE = "no kernel image is available for execution on the device"
PTX_TOO_NEW = "the provided PTX was compiled with an unsupported toolchain"


def load(path):
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        return {"unreadable": f"{path}: {e}"}


def main():
    dir_, out = Path(sys.argv[1]), Path(sys.argv[2])
    checks = []  # (what, predicted, happened, ok)

    def check(what, predicted, happened, ok):
        checks.append({"what": what, "predicted": predicted, "happened": happened, "ok": bool(ok)})

    # doctor's reading of the machine against nvidia-smi's.
    host = load(out / "host.json")
    smi_rows = []
    smi = out / "nvidia-smi.csv"
    if smi.exists():
        for line in smi.read_text().splitlines():
            parts = [p.strip() for p in line.split(",")]
            if len(parts) >= 4:
                smi_rows.append(parts)
    if smi_rows:
        check("driver version", host.get("driver"), smi_rows[0][3], host.get("driver") == smi_rows[0][3])
        gpus = host.get("gpus") or []
        check("GPU count", len(gpus), len(smi_rows), len(gpus) == len(smi_rows))
        for g, row in zip(gpus, smi_rows):
            major, _, minor = row[2].partition(".")
            sm = int(major) * 10 + int(minor or 0)
            check(f"GPU {row[0]} name", g.get("name"), row[1], g.get("name") == row[1])
            check(f"GPU {row[0]} compute capability", g.get("sm"), sm, g.get("sm") == sm)
    else:
        check("nvidia-smi", "a GPU", "nvidia-smi gave nothing", False)

    runs = {}
    for lib in LIBS:
        doc = load(out / f"doctor-{lib}.json")
        run = load(out / f"run-{lib}.json")
        runs[lib] = run
        files = doc.get("files") or [{}]
        f = files[0]
        happened = (
            f"rc {run.get('rc')}: {run.get('message')}; sum {run.get('sum')}, __CUDA_ARCH__ {run.get('arch')}"
            if run.get("loaded")
            else f"did not load: {run.get('message') or run.get('unreadable')}"
        )
        if f.get("driver_problems"):
            text = "; ".join(str(p) for p in f["driver_problems"])
            check(f"{lib}.so: driver", text, happened, run.get("rc") not in (None, 0))
            continue
        for g in f.get("gpus") or []:
            status, detail = g.get("status"), g.get("detail", "")
            predicted = f"{status}: {detail}"
            if status in ("cubin", "jit"):
                m = re.search(r"(?:sm|compute)_(\d+)", detail.split(":")[-1] if status == "jit" else detail)
                arch = int(m.group(1)) * 10 if m else None
                ok = run.get("rc") == 0 and run.get("sum") == EXPECTED_SUM and (arch is None or run.get("arch") == arch)
            elif status == "no-kernel-image":
                ok = run.get("rc") not in (None, 0) and run.get("message") == NO_KERNEL_IMAGE
            elif status == "ptx-too-new":
                ok = run.get("rc") not in (None, 0) and PTX_TOO_NEW in (run.get("message") or "")
            else:
                ok = False
            check(f"{lib}.so on {g.get('gpu')}", predicted, happened, ok)
        if not f.get("gpus"):
            check(f"{lib}.so", "doctor judged no GPU", happened, False)

    # A slimmed library answers as the original does wherever both run.
    base = runs.get("orig", {})
    for lib in LIBS[1:]:
        r = runs.get(lib, {})
        if base.get("rc") == 0 and r.get("rc") == 0:
            check(f"{lib}.so against orig.so", base.get("sum"), r.get("sum"), r.get("sum") == base.get("sum"))

    ok = bool(checks) and all(c["ok"] for c in checks)
    (out / "report.json").write_text(json.dumps({"ok": ok, "expected_sum": EXPECTED_SUM, "checks": checks}, indent=1))
    lines = ["# GPU check", "", f"kernel sum expected: {EXPECTED_SUM}", "",
             "| | check | predicted | happened |", "|---|---|---|---|"]
    for c in checks:
        cell = lambda v: str(v).replace("|", "\\|")
        lines.append(f"| {'ok' if c['ok'] else '**DIFFERS**'} | {c['what']} | {cell(c['predicted'])} | {cell(c['happened'])} |")
    (out / "report.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
