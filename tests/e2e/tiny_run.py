"""What the e2e scripts share: scenarios/tiny.json (renamed, with their edits), and one `geotb run`
of a scenario (tiny's or any other) whose exit status and single report are checked, the report
validated against harness/report.schema.json (python3-jsonschema)."""
import json
import subprocess
import sys
from pathlib import Path

import jsonschema


def tiny_scenario(source_root: Path, name: str) -> dict:
    """scenarios/tiny.json named `name` (its reports are <name>-<time>.json)."""
    scenario = json.loads((source_root / "scenarios/tiny.json").read_text())
    scenario["name"] = name
    return scenario


def run_and_report(geotb: str, source_root: Path, scenario: dict, out: str, *args: str, timeout: int = 300):
    """Writes `scenario` into `out`, runs `geotb run` on it with `args`, and returns (the finished
    process, the report read back and validated). Fails unless it exits 0 with one report."""
    path = Path(out) / (scenario["name"] + ".json")
    path.write_text(json.dumps(scenario))
    proc = subprocess.run([geotb, "run", str(path), "--out", out, *args], capture_output=True, text=True,
                          timeout=timeout)
    print(proc.stdout)
    print(proc.stderr, file=sys.stderr)
    assert proc.returncode == 0, f"geotb run exited {proc.returncode}"
    reports = list(Path(out).glob(scenario["name"] + "-*.json"))
    assert len(reports) == 1, f"expected one report, found {reports}"
    assert str(reports[0]) in proc.stdout, "the summary must print the report's path"
    rep = json.loads(reports[0].read_text())
    schema = json.loads((source_root / "harness/report.schema.json").read_text())
    jsonschema.validate(rep, schema, cls=jsonschema.Draft202012Validator)
    return proc, rep, reports[0]
