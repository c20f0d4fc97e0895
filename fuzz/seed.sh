#!/usr/bin/env bash
# Seeds the fuzz corpora from the device-code fixtures.
#   fuzz/corpus/fatbin/  raw bytes of every .nv_fatbin and __nv_relfatbin section
#   fuzz/corpus/elf/     the fixture files themselves
# Needs objcopy (binutils). Safe to re-run: existing seeds are overwritten.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
fixtures="$here/../tests/fixtures/device"
fat="$here/corpus/fatbin"
elf="$here/corpus/elf"
mkdir -p "$fat" "$elf"

for f in "$fixtures"/*; do
    [ -f "$f" ] || continue
    # Only ELF files: skip the listings, scripts and notes beside them.
    [ "$(head -c 4 "$f" | od -An -tx1 | tr -d ' \n')" = "7f454c46" ] || continue
    name="$(basename "$f")"
    cp "$f" "$elf/$name"
    for section in .nv_fatbin __nv_relfatbin; do
        out="$fat/$name@${section#.}"
        # objcopy writes an empty file when the section is absent; drop those.
        if objcopy -O binary --only-section="$section" "$f" "$out" 2>/dev/null && [ -s "$out" ]; then
            :
        else
            rm -f "$out"
        fi
    done
done

echo "seeded $(ls "$fat" | wc -l) fatbin section(s) into $fat"
echo "seeded $(ls "$elf" | wc -l) ELF file(s) into $elf"
