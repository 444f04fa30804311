#!/usr/bin/env python3
"""ci/require_all.py on crafted meson test logs: a skipped dpdk or e2e test (exit 77) and a
GoogleTest case that called GTEST_SKIP() fail it (exit 1, each named with its reason); a skipped
gpu test does not; a log without skips passes; no log is exit 2."""
import json
import subprocess
import sys
import tempfile
from pathlib import Path

script = Path(sys.argv[1])


def run(build: Path, *extra: str) -> subprocess.CompletedProcess:
    p = subprocess.run([sys.executable, str(script), str(build), *extra], capture_output=True, text=True, timeout=60)
    print(f"$ require_all.py {build.name} {' '.join(extra)} -> exit {p.returncode}\n{p.stdout}{p.stderr}")
    return p


def entry(name: str, suite: str, result: str, stdout: str = "") -> str:
    # The form meson 1.0 writes: "project:suite / test", no suite key.
    return json.dumps({"name": f"geotb:{suite} / {name}", "result": result, "stdout": stdout,
                       "returncode": 77 if result == "SKIP" else 0, "duration": 0.1})


def entry_new(name: str, suite: str, result: str, stdout: str = "") -> str:
    # Later meson versions: a suite list beside the name.
    return json.dumps({"name": f"geotb:{suite} / {name}", "suite": [f"geotb:{suite}"], "result": result,
                       "stdout": stdout, "returncode": 77 if result == "SKIP" else 0, "duration": 0.1})


GTEST_XML = """<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="2" failures="0" disabled="0" errors="0" name="AllTests">
  <testsuite name="CpuShield" tests="2" failures="0" disabled="0" skipped="1" errors="0">
    <testcase name="Holds" status="run" result="completed" classname="CpuShield"/>
    <testcase name="SecondOwner" status="run" result="skipped" classname="CpuShield">
      <skipped message="needs root"><![CDATA[needs root]]></skipped>
    </testcase>
  </testsuite>
</testsuites>
"""

with tempfile.TemporaryDirectory() as tmp:
    build = Path(tmp) / "build"
    (build / "meson-logs").mkdir(parents=True)
    log = build / "meson-logs" / "testlog.json"

    assert run(build).returncode == 2, "no log: exit 2"

    log.write_text("\n".join([entry("engine_unit_tests", "unit", "OK"),
                              entry("kernels_gpu_tests", "gpu", "SKIP", "no CUDA device: skipped")]) + "\n")
    p = run(build)
    assert p.returncode == 0 and "no test skipped outside gpu" in p.stdout, "a gpu skip is allowed"

    log.write_text("\n".join([entry("engine_unit_tests", "unit", "OK"),
                              entry("exec_dpdk", "dpdk", "SKIP", "starting\niperf3 missing: skipped\n"),
                              entry("compare_chromium", "e2e", "SKIP", "chromium is not installed: skipping"),
                              entry("kernels_gpu_tests", "gpu", "SKIP", "no device")]) + "\n")
    p = run(build)
    assert p.returncode == 1, "a dpdk skip must fail"
    assert "exec_dpdk (dpdk): skipped: iperf3 missing: skipped" in p.stderr, p.stderr
    assert "compare_chromium (e2e): skipped: chromium is not installed: skipping" in p.stderr, p.stderr
    assert "2 test(s) skipped" in p.stderr and "kernels_gpu_tests" not in p.stderr
    assert run(build, "--allow-suite", "gpu", "--allow-suite", "dpdk", "--allow-suite", "e2e").returncode == 0
    log.write_text("\n".join([entry_new("exec_dpdk", "dpdk", "SKIP", "iperf3 missing: skipped"),
                              entry_new("kernels_gpu_tests", "gpu", "SKIP", "no device")]) + "\n")
    p = run(build)
    assert p.returncode == 1 and "exec_dpdk (dpdk): skipped: iperf3 missing: skipped" in p.stderr, p.stderr

    log.write_text(entry("dpdk_cpu_shield", "dpdk", "OK") + "\n")
    (build / "dpdk_cpu_shield.xml").write_text(GTEST_XML)
    p = run(build)
    assert p.returncode == 1, "a GTEST_SKIP case must fail"
    assert "dpdk_cpu_shield (dpdk): case CpuShield.SecondOwner: needs root" in p.stderr, p.stderr
    assert "Holds" not in p.stderr

print("require_all_test: skips outside gpu fail with their reasons, gpu skips pass")
