#!/usr/bin/env python3
"""The house's layering, checked from the includes (ci/check-layers.sh runs it; so does ctest).

- Floors point down only: app -> fuzz -> harness -> runtime. harness includes no fuzz/ or app/,
  fuzz no app/, runtime nothing above it.
- No circle between a folder and its sub-folders: when a file of folder F includes one of F/S, no
  file under F/S includes a file that sits directly in F (and the same for any two folders where
  one contains the other).
- No two-way tie between two files of one folder: foo.h, foo.hpp and foo.cpp are one unit "foo";
  when a file of unit A includes a header of unit B (same folder) and a file of B includes a header
  of A, the two are one knot with an arrow pointing up (e.g. a campaign that includes its parallel
  driver's header while that driver includes the campaign's).
Prints each violation (the including file and the include) and exits 1 on any.

Usage: check-layers.py [ROOT]   (ROOT: the tree to check; default the repository this script is in)
"""
import os
import re
import sys

FLOORS = ["runtime", "harness", "fuzz", "app"]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
EXTENSIONS = (".h", ".hpp", ".cpp")
HEADERS = (".h", ".hpp")


def sources(root):
    for floor in FLOORS:
        for dirpath, _, files in os.walk(os.path.join(root, floor)):
            for f in sorted(files):
                if f.endswith(EXTENSIONS):
                    path = os.path.relpath(os.path.join(dirpath, f), root).replace(os.sep, "/")
                    with open(os.path.join(root, path), encoding="utf-8") as fh:
                        yield path, INCLUDE.findall(fh.read())


def unit(path):
    """foo/bar.h, foo/bar.hpp and foo/bar.cpp are the unit foo/bar."""
    return os.path.splitext(path)[0]


def resolved(root, path, inc):
    """The include as a path from the root: as written (the house's style), else beside the includer."""
    if os.path.isfile(os.path.join(root, inc)):
        return inc
    beside = os.path.normpath(os.path.join(os.path.dirname(path), inc)).replace(os.sep, "/")
    return beside if os.path.isfile(os.path.join(root, beside)) else inc


def floor_problems(files):
    problems = []
    edges = set()  # (folder of includer, folder of included)
    examples = {}
    for path, includes in files:
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
    return problems


def tie_problems(root, files):
    """Units of one folder that include each other's headers."""
    arrows = {}  # (unit A, unit B) -> first "a includes b" seen
    for path, includes in files:
        for inc in includes:
            target = resolved(root, path, inc)
            if not target.endswith(HEADERS) or os.path.dirname(target) != os.path.dirname(path):
                continue
            a, b = unit(path), unit(target)
            if a != b:
                arrows.setdefault((a, b), f"{path} includes {inc}")
    problems = []
    for (a, b), why in sorted(arrows.items()):
        if a < b and (b, a) in arrows:
            problems.append(f"two-way tie between {a} and {b}: {why}; {arrows[(b, a)]}")
    return problems


def main(argv):
    root = os.path.abspath(argv[1]) if len(argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    files = list(sources(root))
    problems = sorted(set(floor_problems(files) + tie_problems(root, files)))
    for p in problems:
        print(p)
    print(f"check-layers: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
