#!/usr/bin/python3
"""Tests of tests/docs/doc_blocks.py on crafted docs: a block that drifted from the program fails.

The "program" is a shell script `build/harness/tool` in a scratch checkout: `tool run --steps N`
prints a table and exits 0, `tool run --bad` exits 2 with an error, `tool --help` lists its options.
Usage: doc_blocks_test.py DOC_BLOCKS_PY
"""
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap

RUNNER = os.path.abspath(sys.argv[1])
failures = []

TOOL = r'''#!/bin/bash
case "$*" in
  "--help"|"run --help") echo "usage: tool run [--steps N] [--out DIR]"; exit 0 ;;
  "run --steps 3")
    echo "strategy     samples/s     wall"
    printf "naive_ddp          10.5 %8s\n" "$RANDOM.1"
    printf "hier               21.0 %8s\n" "$RANDOM.2"
    echo "the host took $RANDOM.5 s"; exit 0 ;;
  "run --bad") echo "tool: error: --bad: no such option" >&2; exit 2 ;;
  "write") echo hello > made.txt; exit 0 ;;
  "read") cat made.txt; exit 0 ;;
esac
echo "tool: unknown arguments: $*" >&2; exit 3
'''


def checkout(doc):
    d = tempfile.mkdtemp(prefix="doc-blocks-test-")
    os.makedirs(os.path.join(d, "build", "harness"))
    os.makedirs(os.path.join(d, "docs", "guide"))
    os.makedirs(os.path.join(d, "reports", "baselines"))
    tool = os.path.join(d, "build", "harness", "tool")
    with open(tool, "w") as f:
        f.write(TOOL)
    os.chmod(tool, 0o755)
    with open(os.path.join(d, "README.md"), "w") as f:
        f.write(textwrap.dedent(doc))
    return d


def run(doc, *args):
    d = checkout(doc)
    try:
        p = subprocess.run([sys.executable, RUNNER, d, *args], text=True, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return p.returncode, p.stdout


def expect(name, doc, status, needle=None):
    code, out = run(doc)
    ok = code == status and (needle is None or needle in out)
    print(f"{'ok  ' if ok else 'FAIL'} {name}: exit {code} (expected {status})"
          + (f", \"{needle}\" {'found' if needle in out else 'missing'}" if needle else ""))
    if not ok:
        print("  " + out.replace("\n", "\n  "))
        failures.append(name)


TABLE = """
<!-- doctest: run
vary: wall
mask: the host took [0-9.]+ s
-->
```
$ tool run --steps 3
strategy     samples/s     wall
naive_ddp          10.5  99999.1
...
hier               21.0      7.2
the host took 1.5 s
```
"""

expect("a table whose varying column and host time are masked passes", TABLE, 0, "1 of 1 blocks passed")
expect("a figure that moved fails, naming the line",
       TABLE.replace("21.0", "22.0"), 1, "hier               22.0")
NEAR = TABLE.replace("vary: wall\n", "vary: wall\nnear: samples/s 0.5\n")
expect("a near column within its tolerance passes", NEAR.replace("21.0", "21.4"), 0, "1 of 1 blocks passed")
expect("a near column beyond its tolerance fails, naming the line",
       NEAR.replace("21.0", "21.6"), 1, "hier               21.6")
expect("near compares only its column: another figure that moved still fails",
       NEAR.replace("vary: wall\n", ""), 1, "naive_ddp          10.5  99999.1")
expect("near needs a tolerance", TABLE.replace("vary: wall\n", "near: samples/s\n"), 2,
       "near: \"samples/s\": expected a column and a tolerance")
expect("an unmarked command block is refused", "```sh\ntool run --steps 3\n```\n", 2,
       "README.md:1: a command block without a doctest marker")
expect("a renamed flag in a run block fails (exit status)",
       "<!-- doctest: run -->\n```sh\ntool run --stepz 3\n```\n", 1, "exited 3, expected 0")
expect("a renamed flag in a synopsis fails",
       "<!-- doctest: synopsis -->\n```sh\ntool run [--steps N] [--outdir DIR]\n```\n", 1,
       "--outdir is not an option of \"tool run\"")
expect("a synopsis whose flags exist passes",
       "<!-- doctest: synopsis -->\n```sh\ntool run [--steps N]\n         [--out DIR]\n```\n", 0)
expect("an expected error with its exit status passes",
       "<!-- doctest: run\nexit: 2\n-->\n```\n$ tool run --bad\ntool: error: --bad: no such option\n```\n", 0)
expect("the wrong exit status fails",
       "<!-- doctest: run\nexit: 1\n-->\n```\n$ tool run --bad\n```\n", 1, "exited 2, expected 1")
expect("continue runs in the previous block's directory",
       "<!-- doctest: run -->\n```sh\ntool write\n```\n\n<!-- doctest: run\ncontinue\n-->\n```\n$ tool read\nhello\n```\n",
       0, "2 of 2 blocks passed")
expect("without continue, a block starts in a fresh directory",
       "<!-- doctest: run -->\n```sh\ntool write\n```\n\n<!-- doctest: run -->\n```\n$ tool read\nhello\n```\n", 1)
expect("setup runs first",
       "<!-- doctest: run\nsetup: tool write\n-->\n```\n$ tool read\nhello\n```\n", 0)
expect("skip needs a reason", "<!-- doctest: skip -->\n```sh\ntool run\n```\n", 2, "needs a reason")
expect("an unknown option is refused", "<!-- doctest: run\nretries: 3\n-->\n```sh\ntool run\n```\n", 2,
       "unknown option \"retries: 3\"")
expect("a skipped block is counted with its reason",
       "<!-- doctest: skip: it commits -->\n```sh\ngit commit\n```\n\n<!-- doctest: run -->\n```sh\ntool write\n```\n",
       0, "skip README.md:2: it commits")
expect("a non-command block (JSON) needs no marker", "```json\n{\"a\": 1}\n```\n", 77)

print(f"doc_blocks_test: {len(failures)} failed" if failures else "doc_blocks_test: all passed")
sys.exit(1 if failures else 0)
