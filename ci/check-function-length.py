#!/usr/bin/env python3
"""No function in harness/ over 80 lines, nor in fuzz/ or app/ over 60 (the house's bounds; runtime/fsdp
keeps ~55; the campaign and the command line are where flat drivers live, libFuzzer-style).

A function is a brace block opened at namespace level (a line that ends with '{' after a ')' or a
'const'/'override' qualifier, outside any other function); its length is its lines, braces
included. Lambdas and class bodies inside count toward their function. Prints each function over
the bound and exits 1 on any.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIMITS = {"harness": 80, "fuzz": 60, "app": 60}
OPENER = re.compile(r'\)\s*(const\s*)?(override\s*)?(noexcept\s*)?(->\s*[\w:<>,\s*&]+)?\{\s*$')


def strip(line):
    line = re.sub(r'"(\\.|[^"\\])*"', '""', line)
    line = re.sub(r"'(\\.|[^'\\])*'", "''", line)
    return line.split("//")[0]


def functions(path):
    depth, start, name, fdepth = 0, None, None, None
    with open(path, encoding="utf-8") as fh:
        lines = fh.readlines()
    for i, raw in enumerate(lines):
        line = strip(raw)
        if start is None and OPENER.search(line.rstrip()) and not re.match(r'\s*(if|for|while|switch|catch)\b', line):
            start, name, fdepth = i, raw.strip(), depth
        depth += line.count("{") - line.count("}")
        if start is not None and depth <= fdepth:
            yield name, start + 1, i - start + 1
            start = None


def main():
    bad = []
    for floor, limit in LIMITS.items():
        for dirpath, _, files in os.walk(os.path.join(ROOT, floor)):
            for f in files:
                if f.endswith((".cpp", ".hpp", ".h")):
                    path = os.path.join(dirpath, f)
                    for name, line, length in functions(path):
                        if length > limit:
                            bad.append(f"{os.path.relpath(path, ROOT)}:{line}: {length} lines: {name}")
    for b in bad:
        print(b)
    print(f"check-function-length: {len(bad)} function(s) over their floor's bound {LIMITS}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
