#!/usr/bin/python3
"""kernels/fp16.h and kernels/wire16.h against numpy and, where installed, torch.

numpy (required; exit 77, meson's SKIP, without it): every binary16 value widened to float32
(from_fp16), and float32 -> binary16 (to_fp16) against numpy's float16 (IEEE binary16, round to
nearest even) on a sweep of float32 bit patterns: every (sign, exponent, top 10 mantissa bits) with
the 13 dropped bits at 0, 1, just below half, half, just above half and all ones; every subnormal
half's halfway point and its float32 neighbours; seeded random patterns, all over and within the
range binary16 covers.

torch (optional: the Debian python3-torch, 1.13): the same patterns through c10::Half
(Tensor.half()) and c10::BFloat16 (Tensor.bfloat16()) against to_fp16 / to_bf16, and
naive_ddp's cast-then-divide (kernels::cast_div16) against what bf16_compress_hook and
fp16_compress_hook compute before their allreduce, `bucket.buffer().to(dtype).div_(world_size)`
(torch/distributed/algorithms/ddp_comm_hooks/default_hooks.py), for world sizes 2, 3, 6, 7, 8.
A NaN compares as a NaN (payloads differ: numpy keeps the top bits, c10::Half gives 0x7e00).
Usage: wire16_reference_test.py WIRE16_CONVERT
"""
import subprocess
import sys

try:
    import numpy as np
except ImportError:
    print("SKIP: numpy not installed (apt-get install python3-numpy)")
    sys.exit(77)
try:
    import torch
except ImportError:
    torch = None

helper = sys.argv[1]
failures = 0


def run(args, data):
    return subprocess.run([helper] + args, input=data.tobytes(), capture_output=True, check=True).stdout


def is_nan16(h, bf16=False):
    exp = 0x7F80 if bf16 else 0x7C00
    return ((h & exp) == exp) & ((h & (0x7F if bf16 else 0x3FF)) != 0)


def compare16(what, src, got, want, bf16=False):
    """16-bit results `got` (ours) and `want` for float32 inputs `src` (uint32 patterns)."""
    global failures
    assert len(got) == len(want) == len(src), (len(got), len(want), len(src))
    nan_want, nan_got = is_nan16(want, bf16), is_nan16(got, bf16)
    bad = np.nonzero(((got != want) & ~nan_want) | (nan_want != nan_got))[0]
    failures += len(bad)
    for i in bad[:10]:
        print(f"  {what}: input {src[i]:#010x} ({src[i:i+1].view(np.float32)[0]!r}): got {got[i]:#06x} want {want[i]:#06x}")
    print(f"{what}: {len(src)} values, {int(nan_want.sum())} NaN, {len(bad)} mismatches")


# from_fp16: every half.
halves = np.arange(65536, dtype=np.uint32).astype(np.uint16)
got = np.frombuffer(run(["from-fp16"], halves.astype("<u2")), dtype="<u4")
want_f = halves.view(np.float16).astype(np.float32)
want, nan = want_f.view(np.uint32), np.isnan(want_f)
bad = np.nonzero(((got != want) & ~nan) | (nan != np.isnan(got.view(np.float32))))[0]
failures += len(bad)
for i in bad[:10]:
    print(f"  from_fp16: {halves[i]:#06x}: got {got[i]:#010x} want {want[i]:#010x}")
print(f"from_fp16 vs numpy: 65536 halves, {int(nan.sum())} NaN, {len(bad)} mismatches")

# The float32 sweep.
top = np.arange(1 << 19, dtype=np.uint32) << np.uint32(13)  # sign, exponent, top 10 mantissa bits
lows = np.array([0, 1, 0x0FFF, 0x1000, 0x1001, 0x1FFF], dtype=np.uint32)
pats = [(top[:, None] | lows[None, :]).ravel()]
k = np.arange(1, 1 << 11, dtype=np.float32)  # k * 2^-25: the subnormal halves and their midpoints
mid = (k * np.float32(2.0 ** -25)).view(np.uint32)
for sign in (np.uint32(0), np.uint32(0x80000000)):
    pats += [mid | sign, (mid - np.uint32(1)) | sign, (mid + np.uint32(1)) | sign]
rng = np.random.default_rng(20240601)
pats.append(rng.integers(0, 1 << 32, size=3_000_000, dtype=np.uint64).astype(np.uint32))
m = rng.integers(0, 1 << 23, size=2_000_000, dtype=np.uint64).astype(np.uint32)
e = rng.integers(100, 146, size=m.size, dtype=np.uint64).astype(np.uint32)  # around binary16's range
s = rng.integers(0, 2, size=m.size, dtype=np.uint64).astype(np.uint32)
pats.append((s << np.uint32(31)) | (e << np.uint32(23)) | m)
src = np.concatenate(pats).astype(np.uint32)
src_f = src.view(np.float32)
ours16 = np.frombuffer(run(["to-fp16"], src.astype("<u4")), dtype="<u2")
with np.errstate(over="ignore", invalid="ignore"):
    compare16("to_fp16 vs numpy float16", src, ours16, src_f.astype(np.float16).view(np.uint16))

if torch is None:
    print("torch not installed: the c10::Half, c10::BFloat16 and compress-hook comparisons are skipped")
    sys.exit(1 if failures else 0)

print(f"torch {torch.__version__}")
t = torch.from_numpy(src_f.copy())
compare16("to_fp16 vs torch Tensor.half()", src, ours16, t.half().view(torch.int16).numpy().view(np.uint16))
ours_bf = np.frombuffer(run(["to-bf16"], src.astype("<u4")), dtype="<u2")
compare16("to_bf16 vs torch Tensor.bfloat16()", src, ours_bf, t.bfloat16().view(torch.int16).numpy().view(np.uint16),
          bf16=True)

# The compress hooks' cast and division, on gradient-like values: random magnitudes over both
# formats' ranges (binary16's overflow and subnormals included), and the sweep's finite patterns.
g = np.concatenate([
    (rng.standard_normal(500_000) * np.exp2(rng.integers(-30, 20, size=500_000))).astype(np.float32),
    src_f[np.isfinite(src_f)][::7]])
gb = g.view(np.uint32)
for world in (2, 3, 6, 7, 8):
    for name, dtype, bf in (("fp16", torch.float16, False), ("bf16", torch.bfloat16, True)):
        want = torch.from_numpy(g.copy()).to(dtype).div_(world).view(torch.int16).numpy().view(np.uint16)
        got = np.frombuffer(run([f"hook-{name}", str(world)], g.astype("<f4")), dtype="<u2")
        compare16(f"cast_div16 {name} world {world} vs torch .to({dtype}).div_({world})", gb, got, want, bf16=bf)
sys.exit(1 if failures else 0)
