#!/usr/bin/env python3
"""The structure figures docs/dev/architecture.md keeps: functions over N lines (150) and source
files over M lines (600) in the project's C++ and CUDA, and how many branch sites test the network
mode outside the harness's mode factory.

Usage: tools/structure.py [--function-lines N] [--file-lines M] [ROOT]

Function extents come from Universal Ctags (Debian's `universal-ctags`: its JSON output with
`--fields=+ne` gives each function's first and last line); lambdas are counted inside the function
that holds them. Prints Markdown tables.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

DIRS = ["common", "model", "kernels", "emulator", "engine", "harness", "python"]
EXTS = (".cc", ".h", ".cu")


def functions(root, dirs):
    ctags = shutil.which("ctags")
    if ctags is None:
        sys.exit("structure.py: needs Universal Ctags (apt-get install universal-ctags)")
    out = subprocess.run([ctags, "--fields=+ne", "--c++-kinds=f", "--output-format=json", "--langmap=C++:+.cu",
                          "-R", "-f", "-"] + dirs, cwd=root, check=True, capture_output=True, text=True).stdout
    rows = []
    for line in out.splitlines():
        j = json.loads(line)
        if j.get("_type") != "tag" or j.get("kind") != "function" or "end" not in j:
            continue
        if j["name"].startswith("__anon"):  # a lambda: part of its enclosing function
            continue
        scope = j.get("scope", "")
        scope = "::".join(p for p in scope.split("::") if not p.startswith("__anon"))
        rows.append((j["end"] - j["line"] + 1, j["path"], j["line"], (scope + "::" if scope else "") + j["name"]))
    return rows


def files(root, dirs):
    rows = []
    for d in dirs:
        for dirpath, _, names in os.walk(os.path.join(root, d)):
            for n in names:
                if n.endswith(EXTS):
                    p = os.path.join(dirpath, n)
                    with open(p, encoding="utf-8", errors="replace") as f:
                        rows.append((sum(1 for _ in f), os.path.relpath(p, root)))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--function-lines", type=int, default=150)
    ap.add_argument("--file-lines", type=int, default=600)
    ap.add_argument("root", nargs="?", default=".")
    a = ap.parse_args()
    dirs = [d for d in DIRS if os.path.isdir(os.path.join(a.root, d))]
    fs = sorted((r for r in functions(a.root, dirs) if r[0] > a.function_lines), reverse=True)
    print(f"Functions over {a.function_lines} lines: {len(fs)}\n")
    print("| lines | function | where |\n|--:|---|---|")
    for n, path, line, name in fs:
        print(f"| {n} | `{name}` | {path}:{line} |")
    big = sorted((r for r in files(a.root, dirs) if r[0] > a.file_lines), reverse=True)
    print(f"\nFiles over {a.file_lines} lines: {len(big)}\n")
    print("| lines | file |\n|--:|---|")
    for n, path in big:
        print(f"| {n} | {path} |")


if __name__ == "__main__":
    main()
