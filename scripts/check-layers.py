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


CALL = re.compile(r"\b(latdoc_library|target_sources|target_link_libraries)\s*\(([^)]*)\)", re.S)
KEYWORDS = {"SOURCES", "DEPS", "PUBLIC", "PRIVATE", "INTERFACE"}


def read_libraries(root):
    """The module libraries the CMake files under `root` declare: name -> (module, cmake file,
    {sources relative to src}, [latdoc_* deps]). A library's module is its folder's (for trace,
    the folder of its first source)."""
    libs = {}
    for dirpath, _, files in os.walk(root):
        for f in sorted(files):
            if f != "CMakeLists.txt" and not f.endswith(".cmake"):
                continue
            path = os.path.join(dirpath, f)
            folder = os.path.relpath(dirpath, root)
            if folder == ".":
                continue
            text = re.sub(r"#[^\n]*", "", open(path, encoding="utf-8").read())
            for call in CALL.finditer(text):
                kind, words = call.group(1), call.group(2).split()
                if not words or not words[0].startswith("latdoc_"):
                    continue
                name, section = words[0], "SOURCES" if kind == "target_sources" else "DEPS"
                if kind == "latdoc_library":
                    libs[name] = [None, os.path.relpath(path, os.path.dirname(root)), set(), []]
                if name not in libs:
                    continue
                for w in words[1:]:
                    if w in KEYWORDS:
                        section = {"PUBLIC": "DEPS", "PRIVATE": section if kind == "target_sources"
                                   else "DEPS", "INTERFACE": "DEPS"}.get(w, w)
                    elif section == "SOURCES" and w.endswith(".cc"):
                        libs[name][2].add(os.path.normpath(os.path.join(folder, w)))
                    elif section == "DEPS" and w.startswith("latdoc_"):
                        libs[name][3].append(w)
    for lib in libs.values():
        first = sorted(lib[2])[0] if lib[2] else None
        lib[0] = module_of(first) if first else None
    return libs


def check_cmake(root):
    """CMake mirrors the layers: a library links no module above or beside its own, and a
    source includes only modules its library links (directly or through its deps)."""
    errors = []
    libs = read_libraries(root)
    for name, (mod, cmake, _, deps) in sorted(libs.items()):
        for d in deps:
            if d not in libs:
                continue
            target = libs[d][0]
            if mod in LEVEL and target in LEVEL and target != mod and LEVEL[target] >= LEVEL[mod]:
                where = "above" if LEVEL[target] > LEVEL[mod] else "beside"
                errors.append(f"{cmake}: {name} links {d}: {target} is {where} {mod}")

    def reach(name, seen):
        for d in libs.get(name, [None, None, set(), []])[3]:
            if d not in seen:
                seen.add(d)
                reach(d, seen)
        return seen

    for name, (mod, cmake, sources, _) in sorted(libs.items()):
        linked = {libs[d][0] for d in reach(name, set()) if d in libs} | {mod}
        for rel in sorted(sources):
            path = os.path.join(root, rel)
            if not os.path.exists(path):
                continue
            for n, line in enumerate(open(path, encoding="utf-8", errors="replace"), 1):
                m = INCLUDE.match(line)
                if not m or "/" not in m.group(1):
                    continue
                target = module_of(m.group(1))
                if target in LEVEL and target not in linked:
                    errors.append(f"src/{rel}:{n}: includes {m.group(1)}, but {name} does not "
                                  f"link {target} ({cmake})")
    return errors


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
    errors += check_cmake(root)
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
