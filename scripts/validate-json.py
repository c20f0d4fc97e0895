#!/usr/bin/env python3
"""Validate cudist's JSON outputs against the committed schemas (docs/schema/), with Python's
jsonschema: an independent validator for the contract the Rust types generate.

    validate-json.py SCHEMA_DIR NAME=FILE [NAME=FILE ...]

NAME is a schema's file stem (inspect, repair, toolkit.env, ...). Prints one line per invalid
document (the file, the failing path and the reason) and exits 1 if any is invalid.
"""
import json
import sys
from pathlib import Path

import jsonschema


def main() -> int:
    schema_dir = Path(sys.argv[1])
    bad = 0
    for arg in sys.argv[2:]:
        name, _, path = arg.partition("=")
        schema = json.loads((schema_dir / f"{name}.json").read_text())
        cls = jsonschema.validators.validator_for(schema)
        cls.check_schema(schema)
        doc = json.loads(Path(path).read_text())
        errors = sorted(cls(schema).iter_errors(doc), key=lambda e: list(e.absolute_path))
        for e in errors[:5]:
            where = "/".join(str(p) for p in e.absolute_path) or "(top)"
            print(f"{path}: {name}: at {where}: {e.message[:300]}")
        if errors:
            bad += 1
    print(f"{len(sys.argv) - 2 - bad} valid, {bad} invalid")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
