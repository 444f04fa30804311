#!/usr/bin/env python3
"""e2e: `geotb compare` on two real reports of scenarios/us-east-us-west.json (the committed
baseline and a second run kept as test data), then the HTML page rendered in headless Chromium:
- the page is self-contained: no <script>, no external URL (only the SVG namespace), no <link>;
- the DOM Chromium built has the 7 charts (one <svg> each, identified by their <title>), the
  legends name every strategy of both runs, the axes carry units;
- the screenshot (1400x3000) is not blank: it has many non-white pixels and the strategies'
  colours are painted in quantity.
Then the same for a 3-seed report of scenarios/strategy-bakeoff.json (`geotb run --seeds 3`, kept as
test data): the 8th chart (final accuracy per seed), the mean ± sd and time-to-accuracy columns
and the comm/compute alarm are on the page, and its screenshot is not blank.
Leaves the pages and the screenshots in the build dir (argv[3]) for people to look at.
Exit 77 (meson: skipped) only when chromium is not installed."""
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

geotb, root, build_dir = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
chromium = shutil.which("chromium") or shutil.which("chromium-browser")
if not chromium:
    print("chromium is not installed (ci/install-deps.sh installs it): skipping")
    sys.exit(77)
from PIL import Image  # noqa: E402  (python3-pil, installed by ci/install-deps.sh)

reports = [root / "reports/baselines/us-east-us-west.json", root / "tests/report/data/us-east-us-west-run2.json"]
p = subprocess.run([geotb, "compare", *map(str, reports), "--out", str(build_dir), "--name", "compare-page"],
                   capture_output=True, text=True, timeout=60)
print(p.stdout, p.stderr)
assert p.returncode == 0, f"geotb compare exited {p.returncode}"
html_path, md_path = build_dir / "compare-page.html", build_dir / "compare-page.md"
html, md = html_path.read_text(), md_path.read_text()

# Self-contained: nothing to fetch, nothing to run.
assert "<script" not in html.lower(), "the page must not contain scripts"
assert "<link" not in html.lower(), "the page must not link stylesheets"
urls = set(re.findall(r"https?://[^\s\"'<>)]+", html))
assert urls <= {"http://www.w3.org/2000/svg"}, f"external URLs in the page: {urls}"
assert "| hier_ef_topk_int8 (run 2) |" in md and "compare-page.html" in md

CHARTS = ["Training loss vs wall time", "Training loss vs samples", "Test accuracy vs samples", "Throughput",
          "Time per step", "WAN traffic per run", "Exchange efficiency"]
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--hide-scrollbars", "--window-size=1400,3000"]
url = html_path.resolve().as_uri()
shot = build_dir / "compare-screenshot.png"
with tempfile.TemporaryDirectory() as profile:
    dom = subprocess.run([chromium, *FLAGS, f"--user-data-dir={profile}/a", "--dump-dom", url],
                         capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, f"chromium --dump-dom exited {dom.returncode}: {dom.stderr[-2000:]}"
    if shot.exists():
        shot.unlink()
    scr = subprocess.run([chromium, *FLAGS, f"--user-data-dir={profile}/b", f"--screenshot={shot}", url],
                         capture_output=True, text=True, timeout=120)
    assert scr.returncode == 0 and shot.exists(), f"chromium --screenshot failed: {scr.stderr[-2000:]}"

d = dom.stdout
n_svg = len(re.findall(r"<svg\b", d))
assert n_svg == len(CHARTS), f"expected {len(CHARTS)} <svg> charts in the DOM, found {n_svg}"
for title in CHARTS:
    assert f"<title>{title}</title>" in d, f"chart {title!r} missing from the DOM"
for label in ["naive_ddp (run 1)", "hier_ef_topk_int8 (run 1)", "naive_ddp (run 2)", "hier_ef_topk_int8 (run 2)"]:
    assert f">{label}</text>" in d, f"legend/label {label!r} missing"
for axis in ["wall time since the first step [s]", "training samples (whole cluster) [samples]",
             "test accuracy (rank 0's model) [%]", "[samples/s]", "[ms]", "[B] (log scale)"]:
    assert axis.replace("'", "&#39;") in d or axis in d, f"axis title {axis!r} missing"
n_lines = len(re.findall(r"<polyline\b", d))
assert n_lines >= 12, f"expected 3 curves (loss x2, accuracy) for 4 strategy runs, found {n_lines} polylines"

img = Image.open(shot).convert("RGB")
assert img.size == (1400, 3000), img.size
small = img.resize((700, 1500))  # 1/4 of the pixels, same proportions
px = list(small.getdata())
background = {(255, 255, 255), (250, 250, 250)}
non_bg = sum(1 for c in px if c not in background)
frac = non_bg / len(px)
colours = len(set(px))
print(f"screenshot {shot}: {frac:.1%} non-background pixels, {colours} distinct colours")
assert frac > 0.05, f"the screenshot is (nearly) blank: {frac:.2%} non-background pixels"
assert colours > 50, f"the screenshot has only {colours} colours"


def near(c, ref, tol=40):
    return all(abs(a - b) <= tol for a, b in zip(c, ref))


for name, ref in [("naive_ddp", (0xD5, 0x5E, 0x00)), ("hier_ef_topk_int8", (0x00, 0x72, 0xB2))]:
    n = sum(1 for c in px if near(c, ref))
    print(f"  pixels in {name}'s colour: {n}")
    assert n > 300, f"{name}'s colour is (nearly) absent from the screenshot ({n} pixels): a chart did not render"
# The charts go down the page: the lower half is not empty either.
lower = list(img.crop((0, 1500, 1400, 3000)).resize((350, 375)).getdata())
lower_frac = sum(1 for c in lower if c not in background) / len(lower)
assert lower_frac > 0.03, f"the lower half of the page is blank ({lower_frac:.2%})"
print(f"compare_chromium: {n_svg} charts in the DOM, screenshot at {shot}")

# --- a 3-seed bakeoff report: spread, time to accuracy, comm/compute alarm ---
bake = root / "tests/report/data/strategy-bakeoff-seeds3.json"
p = subprocess.run([geotb, "compare", str(bake), "--out", str(build_dir), "--name", "bakeoff-page"],
                   capture_output=True, text=True, timeout=60)
print(p.stdout, p.stderr)
assert p.returncode == 0, f"geotb compare exited {p.returncode}"
bhtml, bmd = (build_dir / "bakeoff-page.html").read_text(), (build_dir / "bakeoff-page.md").read_text()
for name in ["naive_ddp", "hier_ef_topk_int8", "local_sgd", "diloco"]:
    row = next((l for l in bmd.splitlines() if l.startswith(f"| {name} |")), None)
    assert row and "(3 seeds)" in row and "84.0 %:" in row, f"{name}: no seed spread or time to accuracy in {row!r}"
assert "comm/compute alarm** (exposed communication above 0.1 of compute): naive_ddp (8.4)" in bmd, bmd
bshot = build_dir / "bakeoff-screenshot.png"
with tempfile.TemporaryDirectory() as profile:
    url = (build_dir / "bakeoff-page.html").resolve().as_uri()
    dom = subprocess.run([chromium, *FLAGS, f"--user-data-dir={profile}/a", "--dump-dom", url],
                         capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, f"chromium --dump-dom exited {dom.returncode}: {dom.stderr[-2000:]}"
    if bshot.exists():
        bshot.unlink()
    scr = subprocess.run([chromium, *FLAGS, f"--user-data-dir={profile}/b", f"--screenshot={bshot}", url],
                         capture_output=True, text=True, timeout=120)
    assert scr.returncode == 0 and bshot.exists(), f"chromium --screenshot failed: {scr.stderr[-2000:]}"
d = dom.stdout
n_svg = len(re.findall(r"<svg\b", d))
assert n_svg == len(CHARTS) + 1, f"expected {len(CHARTS) + 1} <svg> charts in the bakeoff page, found {n_svg}"
assert "<title>Final test accuracy per seed</title>" in d, "the per-seed chart is missing"
assert 'class="alarm"' in d and "comm/compute alarm" in d, "the comm/compute alarm is not on the page"
for label in ["local_sgd", "diloco"]:
    assert f">{label}</text>" in d, f"legend/label {label!r} missing"
img = Image.open(bshot).convert("RGB")
px = list(img.resize((700, 1500)).getdata())
frac = sum(1 for c in px if c not in background) / len(px)
assert frac > 0.05, f"the bakeoff screenshot is (nearly) blank: {frac:.2%} non-background pixels"
print(f"compare_chromium: bakeoff page {n_svg} charts, screenshot at {bshot} ({frac:.1%} non-background)")
