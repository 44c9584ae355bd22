#!/usr/bin/env python3
"""The house's layering, checked from the includes (ci/check-layers.sh runs it; so does ctest).

- Floors point down only: app -> fuzz -> harness -> runtime. harness includes no fuzz/ or app/,
  fuzz no app/, runtime nothing above it.
- No circle between a folder and its sub-folders: when a file of folder F includes one of F/S, no
  file under F/S includes a file that sits directly in F (and the same for any two folders where
  one contains the other).
Prints each violation (the including file and the include) and exits 1 on any.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FLOORS = ["runtime", "harness", "fuzz", "app"]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def sources():
    for floor in FLOORS:
        for dirpath, _, files in os.walk(os.path.join(ROOT, floor)):
            for f in files:
                if f.endswith((".h", ".hpp", ".cpp")):
                    path = os.path.relpath(os.path.join(dirpath, f), ROOT)
                    with open(os.path.join(ROOT, path), encoding="utf-8") as fh:
                        yield path, INCLUDE.findall(fh.read())


def main():
    problems = []
    edges = set()  # (folder of includer, folder of included)
    examples = {}
    for path, includes in sources():
        floor = path.split("/")[0]
        for inc in includes:
            top = inc.split("/")[0]
            if top not in FLOORS:
                continue
            if FLOORS.index(top) > FLOORS.index(floor):
                problems.append(f"{path}: includes {inc}, a floor above {floor}/")
            a, b = os.path.dirname(path), os.path.dirname(inc)
            if a != b:
                edges.add((a, b))
                examples.setdefault((a, b), f"{path} includes {inc}")
    for (a, b) in sorted(edges):
        # b inside a (a parent folder reaching into its sub-folder) while something in b reaches back to a
        if b.startswith(a + "/"):
            for (c, d) in edges:
                if d == a and (c == b or c.startswith(b + "/")):
                    problems.append(f"circle between {a}/ and {b}/: {examples[(a, b)]}; {examples[(c, d)]}")
    for p in sorted(set(problems)):
        print(p)
    print(f"check-layers: {len(set(problems))} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
