#!/usr/bin/python3
"""Every key a scenario file may hold is documented in docs/guide/scenario.md.

The keys are read from the parser's source: harness/scenario.cc (calls like
get_int(w, "batch_per_worker", ...), duration(hb, "timeout"), o.req("name"), o.opt("dir")) and the
strategies' config keys (engine/strategies/*.cc: StrategyKey {.name = "tau", ...}). Each must
appear in the guide as `key`, "key" or a dotted path ending in it (`workload.represents`).
Fails naming every undocumented key and where the parser reads it.
Usage: scenario_keys_test.py SOURCE_ROOT
"""
import re
import sys
from pathlib import Path

root = Path(sys.argv[1])
found = {}  # key -> "file:line"
for path, pattern in [(root / "harness/scenario.cc", r'\b[a-z_]+\([a-z_]+(?:\[[^\]]*\])?, "([A-Za-z_0-9]+)"'),
                      (root / "harness/scenario.cc", r'\.(?:req|opt|has)\("([A-Za-z_0-9]+)"')] + \
                     [(p, r'\.name = "([A-Za-z_0-9]+)"') for p in sorted((root / "engine/strategies").glob("*.cc"))]:
    for n, line in enumerate(path.read_text().split("\n"), 1):
        for k in re.findall(pattern, line):
            found.setdefault(k, f"{path.relative_to(root)}:{n}")
doc = (root / "docs/guide/scenario.md").read_text()
missing = [k for k in sorted(found) if not re.search(r'[`".]' + re.escape(k) + r'[`"]', doc)]
print(f"scenario_keys: {len(found)} keys the parser reads, {len(found) - len(missing)} documented in docs/guide/scenario.md")
for k in missing:
    print(f"  undocumented: \"{k}\" (read at {found[k]})")
assert len(found) > 60, f"only {len(found)} keys found: has the parser's source changed shape?"
sys.exit(1 if missing else 0)
