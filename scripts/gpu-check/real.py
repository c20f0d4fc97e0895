"""Sets doctor's verdict on each installed GPU package beside a real use of it (gpu-check.sh real).

    python3 real.py OUT/real

Reads doctor-CASE.json and use-CASE.json for each case (a package, and the same package with
cuDNN's libraries moved away), writes real.md and real.json. A verdict agrees when "ok" or "risky"
meets a use that ran on the GPU; "will-fail-when-loaded" an import that worked and uses that
failed only on libraries doctor names (JAX's "Unable to load cuDNN" for libcudnn.so.9); a verdict
that the import or the GPU fails, a use that failed. The table keeps
doctor's first reasons and the use's failures so a disagreement can be read off it.
"""

import json
import re
import sys
from pathlib import Path


def load(path):
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        return {"unreadable": f"{path}: {e}"}


def main():
    d = Path(sys.argv[1])
    rows = []
    for doc_path in sorted(d.glob("doctor-*.json")):
        case = doc_path.stem[len("doctor-"):]
        doc, use = load(doc_path), load(d / f"use-{case}.json")
        verdict = (doc.get("verdict") or {}).get("status") or doc.get("unreadable") or "none"
        reasons = ((doc.get("verdict") or {}).get("reasons") or [])[:4]
        failed = [f"{s['step']}: {s.get('error', '')[:300]}" for s in use.get("steps", []) if not s.get("ok")]
        used = use.get("ok")
        steps = use.get("steps", [])
        imported = any(s.get("ok") for s in steps)
        # The libraries doctor says are missing, by stem (libcudnn.so.9: cudnn).
        named = {m.lower() for m in re.findall(r"lib([A-Za-z0-9_]+?)(?:\.so|-)", " ".join(
            (doc.get("verdict") or {}).get("reasons") or []))}
        explained = all(s.get("ok") or any(n in (s.get("error") or "").lower() for n in named) for s in steps)
        if verdict in ("ok", "risky"):
            agrees = used is True
        elif verdict == "will-fail-when-loaded":
            # It imports, and only what needs a library doctor names fails.
            agrees = imported and explained
        elif verdict.startswith("will-fail"):
            agrees = used is False
        else:
            agrees = False
        rows.append({"case": case, "verdict": verdict, "reasons": reasons, "use_ok": used,
                     "use_failures": failed, "agrees": agrees})
    (d / "real.json").write_text(json.dumps(rows, indent=1))
    cell = lambda v: str(v).replace("|", "\\|").replace("\n", " ")
    lines = ["# doctor against real use on the GPU", "", "| | case | doctor | real use | doctor's first lines | use failures |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {'agrees' if r['agrees'] else '**DIFFERS**'} | {r['case']} | {r['verdict']} | "
                     f"{'ran on the GPU' if r['use_ok'] else 'failed'} | {cell('; '.join(r['reasons']))} | {cell('; '.join(r['use_failures']))} |")
    (d / "real.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
