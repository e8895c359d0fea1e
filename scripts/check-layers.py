#!/usr/bin/env python3
"""Fails when a file under src/ includes a header of a higher layer (or of another module of its
own layer). The layers are the architecture (docs/architecture.md): a module may use the ones
below it, never one beside or above it. Run from anywhere: scripts/check-layers.py [SRC_DIR]

Each module is a folder of src/ (trace's three folders are modules of their own). Unit tests
(*_test.cc) are left out: a test may drive its module with a higher one (the runner's tests run
the simulator); what it links is not part of the library's graph."""
import os
import re
import sys

# Lowest first. A module may include modules of lower layers only.
LAYERS = [
    ["base"],
    ["stats", "http", "trace/model"],
    ["servermetrics", "host", "logs", "trace/importers"],
    ["loadgen", "sim", "net", "trace/analysis"],
    ["attribution"],
    ["rules"],
    ["report", "whatif"],
    ["compare", "exporter", "fleet", "diagnose"],
    ["cli"],
]
LEVEL = {m: i for i, layer in enumerate(LAYERS) for m in layer}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def module_of(rel):
    parts = rel.split("/")
    if parts[0] == "trace" and len(parts) > 2:
        return "trace/" + parts[1]
    return parts[0] if len(parts) > 1 else None


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "src")
    root = os.path.normpath(root)
    errors = []
    unknown = set()
    for dirpath, _, files in os.walk(root):
        for f in sorted(files):
            if not f.endswith((".h", ".cc")) or f.endswith("_test.cc"):
                continue
            path = os.path.join(dirpath, f)
            rel = os.path.relpath(path, root)
            mod = module_of(rel)
            if mod is None:
                continue
            if mod not in LEVEL:
                unknown.add(mod)
                continue
            with open(path, encoding="utf-8", errors="replace") as fh:
                for n, line in enumerate(fh, 1):
                    m = INCLUDE.match(line)
                    if not m or "/" not in m.group(1):
                        continue
                    target = module_of(m.group(1))
                    if target is None or target == mod or target not in LEVEL:
                        continue
                    if LEVEL[target] >= LEVEL[mod]:
                        where = "above" if LEVEL[target] > LEVEL[mod] else "beside"
                        errors.append(f"src/{rel}:{n}: {mod} includes {m.group(1)}: {target} is "
                                      f"{where} it (layers: scripts/check-layers.py, docs/architecture.md)")
    for mod in sorted(unknown):
        errors.append(f"src/{mod}: a module in no layer: add it to LAYERS in scripts/check-layers.py")
    for e in errors:
        print(e, file=sys.stderr)
    if errors:
        print(f"check-layers: {len(errors)} include(s) against the layers", file=sys.stderr)
        return 1
    print("check-layers: every include points down")
    return 0


if __name__ == "__main__":
    sys.exit(main())
