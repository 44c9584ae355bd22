#!/usr/bin/env python3
"""ci/check-layers.py on small trees built here: it reports what it should and nothing else.

ctest runs it as check_layers_script (unittest; exit 0 when every case passes).
"""
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "ci", "check-layers.py")


def check(files):
    """Writes `files` ({path: text}) under a fresh root and runs the script on it: (exit code, lines)."""
    with tempfile.TemporaryDirectory() as root:
        for path, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
            with open(os.path.join(root, path), "w", encoding="utf-8") as fh:
                fh.write(text)
        done = subprocess.run([sys.executable, SCRIPT, root], capture_output=True, text=True)
        return done.returncode, done.stdout.splitlines()


def inc(*paths):
    return "".join(f'#include "{p}"\n' for p in paths)


class TwoWayTies(unittest.TestCase):
    def test_a_source_and_a_header_that_include_each_other_are_a_tie(self):
        # fuzz/'s shape in issue 44: the campaign includes its parallel driver, which includes the campaign.
        code, lines = check({
            "fuzz/campaign.h": "",
            "fuzz/campaign.cpp": inc("fuzz/campaign.h", "fuzz/parallel_campaign.h"),
            "fuzz/parallel_campaign.h": inc("fuzz/campaign.h"),
            "fuzz/parallel_campaign.cpp": inc("fuzz/parallel_campaign.h"),
        })
        self.assertEqual(code, 1)
        self.assertEqual(lines, [
            "two-way tie between fuzz/campaign and fuzz/parallel_campaign: fuzz/campaign.cpp includes "
            "fuzz/parallel_campaign.h; fuzz/parallel_campaign.h includes fuzz/campaign.h",
            "check-layers: 1 problem(s)",
        ])

    def test_two_sources_that_include_each_others_headers_are_a_tie(self):
        code, lines = check({
            "runtime/a/x.h": "", "runtime/a/x.cpp": inc("runtime/a/x.h", "runtime/a/y.hpp"),
            "runtime/a/y.hpp": "", "runtime/a/y.cpp": inc("runtime/a/y.hpp", "runtime/a/x.h"),
        })
        self.assertEqual(code, 1)
        self.assertIn("two-way tie between runtime/a/x and runtime/a/y", lines[0])

    def test_an_include_beside_the_file_counts_too(self):
        code, lines = check({"app/p.h": inc("q.h"), "app/q.h": inc("p.h")})
        self.assertEqual(code, 1)
        self.assertIn("two-way tie between app/p and app/q: app/p.h includes q.h; app/q.h includes p.h", lines[0])

    def test_one_way_arrows_and_a_unit_including_its_own_header_are_fine(self):
        code, lines = check({
            "harness/s/a.h": "", "harness/s/a.cpp": inc("harness/s/a.h", "harness/s/b.h"),
            "harness/s/b.h": "", "harness/s/b.cpp": inc("harness/s/b.h"),
            "harness/t/c.cpp": inc("harness/s/a.h"), "harness/t/c.h": "",
        })
        self.assertEqual((code, lines), (0, ["check-layers: 0 problem(s)"]))

    def test_files_of_different_folders_are_no_tie(self):
        # The same names in two folders: not one folder's tie (a folder circle is its own check).
        code, lines = check({
            "harness/u/a.cpp": inc("harness/v/b.h"), "harness/u/a.h": "",
            "harness/v/b.cpp": inc("harness/w/a.h"), "harness/v/b.h": "", "harness/w/a.h": "",
        })
        self.assertEqual((code, lines), (0, ["check-layers: 0 problem(s)"]))


class FloorsAndCircles(unittest.TestCase):
    def test_an_upward_floor_is_reported(self):
        code, lines = check({"harness/x.cpp": inc("fuzz/y.h"), "fuzz/y.h": ""})
        self.assertEqual(code, 1)
        self.assertEqual(lines[0], "harness/x.cpp: includes fuzz/y.h, a floor above harness/")

    def test_a_folder_circle_is_reported(self):
        code, lines = check({"fuzz/a.cpp": inc("fuzz/sub/b.h"), "fuzz/sub/b.h": inc("fuzz/a.h"), "fuzz/a.h": ""})
        self.assertEqual(code, 1)
        self.assertTrue(lines[0].startswith("circle between fuzz/ and fuzz/sub/"), lines)


if __name__ == "__main__":
    unittest.main()
