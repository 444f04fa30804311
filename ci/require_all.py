#!/usr/bin/env python3
"""Fails a test run in which a test this machine can run was skipped (GEOTB_REQUIRE_ALL=1).

    ci/require_all.py BUILD_DIR [--allow-suite gpu ...]

Meson counts exit status 77 as "skipped", and a GoogleTest binary whose cases call GTEST_SKIP()
exits 0: either way a missing tool, a lost privilege or an uninstalled package would leave CI green
with the test not run. This reads what `meson test` recorded for its last run
(BUILD_DIR/meson-logs/testlog.json, and the JUnit XML that protocol-gtest tests leave in BUILD_DIR)
and lists every skipped test and test case outside the allowed suites (default: gpu, the only suite
CI's machines cannot run), with the last line the test printed (its reason). Exit 0 when there is
none, 1 when there is any, 2 when there is no test log to read."""
import argparse
import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path


def split_name(entry: dict) -> tuple:
    """(test name, suites) of a testlog.json entry. Meson 1.0 writes the name as
    "project:suite / test" ("project:suite1+suite2 / test" for several suites) and no suite key;
    later versions add "suite": ["project:suite", ...]."""
    name = entry.get("name", "?")
    suites = {s.split(":")[-1] for s in entry.get("suite", [])}
    if " / " in name:
        head, name = name.split(" / ", 1)
        if not suites:
            suites = set(head.split(":", 1)[-1].split("+"))
    return name, suites


def last_line(text: str) -> str:
    lines = [x for x in (text or "").splitlines() if x.strip()]
    return lines[-1].strip() if lines else "(printed nothing)"


def gtest_skips(xml_path: Path) -> list:
    """Test cases the JUnit XML of a gtest binary reports as skipped, with their messages."""
    out = []
    try:
        root = ET.parse(xml_path).getroot()
    except (ET.ParseError, OSError):
        return out
    for case in root.iter("testcase"):
        skipped = case.find("skipped")
        if case.get("result") == "skipped" or skipped is not None:
            why = (skipped.get("message") if skipped is not None else None) or ""
            out.append(f"{case.get('classname')}.{case.get('name')}" + (f": {why.strip()}" if why.strip() else ""))
    return out


def find_skips(build: Path, allowed: set) -> list:
    log = build / "meson-logs" / "testlog.json"
    if not log.exists():
        raise FileNotFoundError(f"{log}: no test log (run `meson test -C {build}` first)")
    found = []
    for line in log.read_text().splitlines():
        if not line.strip():
            continue
        entry = json.loads(line)
        name, suites = split_name(entry)
        if suites & allowed:
            continue
        where = f"{name} ({', '.join(sorted(suites))})"
        if entry.get("result") == "SKIP":
            found.append(f"{where}: skipped: {last_line(entry.get('stdout'))}")
        elif (build / f"{name}.xml").exists():  # protocol gtest: meson leaves its JUnit XML here
            for case in gtest_skips(build / f"{name}.xml"):
                found.append(f"{where}: case {case}")
    return found


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build", type=Path)
    ap.add_argument("--allow-suite", action="append", default=None,
                    help="a suite whose skips are allowed (repeatable; default: gpu)")
    a = ap.parse_args()
    allowed = set(a.allow_suite) if a.allow_suite is not None else {"gpu"}
    try:
        skips = find_skips(a.build, allowed)
    except (FileNotFoundError, json.JSONDecodeError) as e:
        print(f"require_all: error: {e}", file=sys.stderr)
        return 2
    if not skips:
        print(f"require_all: no test skipped outside {', '.join(sorted(allowed)) or 'any suite'}")
        return 0
    print(f"require_all: FAIL: GEOTB_REQUIRE_ALL=1 and {len(skips)} test(s) skipped that this machine must run "
          f"(only {', '.join(sorted(allowed))} may skip):", file=sys.stderr)
    for s in skips:
        print(f"  {s}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
