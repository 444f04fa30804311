"""HierEF: geotb's hier_ef_topk_int8 (and hierarchical) inside a PyTorch DDP job.

The split is PyTorch's own for post-local SGD: a DDP communication hook averages the gradient
within the site (the engine's "every step: g_d = mean of the DC's gradients"), and a step after
the optimizer's (like PeriodicModelAverager) runs the rounds between the sites every K steps:

    every step      g_d = mean over the site's ranks (the hook);  x_d <- opt(x_d, g_d)
    every K steps   u = x_d - m_d;  wire = compress_ef(u, e_d) (e_d updated: error feedback)
                    the site leaders exchange their wires; each leader forwards them in its site
                    xbar <- xbar + (1/M) sum_d s_d   (summed in site order; s_d = dequantised wire)
                    blocking: x_d <- xbar + e_d;   overlap: x_d <- xbar + s_own + e_d, applying the
                    round before (it had K steps to arrive) while this one flies
                    m_d <- x_d
    finish          apply the round in flight, then a dense float32 exchange of x_d - m_d + e_d:
                    every replica ends with the same model.

Every rank of a site computes the round itself on identical inputs (its replica equals the
leader's after each in-site allreduce, and compress_ef is deterministic); only the leaders talk
across sites. density 1 with values "float32" is `hierarchical` (uncompressed).

Process groups: one per site for the hook, one more per site for the leader's forwards (used by
the round's thread only, so it never interleaves with DDP's allreduce), and one of the leaders.
Every rank creates every group in the same order (c10d's rule).
"""
import os
import threading
from dataclasses import dataclass
from typing import List, Optional

import torch
import torch.distributed as dist

from ._C import compress_ef, decompress_add


@dataclass
class Sites:
    """site[r]: the site index of global rank r (sites numbered 0..M-1, each a contiguous or
    interleaved set of ranks); the leader of a site is its lowest rank."""
    site: List[int]

    @property
    def count(self) -> int:
        return max(self.site) + 1

    def ranks(self, s: int) -> List[int]:
        return [r for r, x in enumerate(self.site) if x == s]

    def leaders(self) -> List[int]:
        return [self.ranks(s)[0] for s in range(self.count)]


def sites_from_env(world: Optional[int] = None) -> Sites:
    """The sites of `geotb exec`: every rank's GEOTB_DC, gathered once over the default group
    (init_process_group first). Outside geotb exec, GEOTB_SITES="0,0,1,1" gives them."""
    world = world if world is not None else dist.get_world_size()
    if os.environ.get("GEOTB_SITES"):
        site = [int(x) for x in os.environ["GEOTB_SITES"].split(",")]
        if len(site) != world:
            raise ValueError(f"GEOTB_SITES: {len(site)} sites for {world} ranks")
    else:
        mine = os.environ.get("GEOTB_DC")
        if mine is None:
            raise ValueError("neither GEOTB_DC (set by geotb exec) nor GEOTB_SITES is set")
        t = torch.tensor([int(mine)], dtype=torch.int64)
        all_ = [torch.zeros(1, dtype=torch.int64) for _ in range(world)]
        dist.all_gather(all_, t)
        site = [int(x.item()) for x in all_]
    if sorted(set(site)) != list(range(max(site) + 1)):
        raise ValueError(f"sites {site}: every site 0..M-1 needs a rank")
    return Sites(site)


class _HookState:
    """What the DDP hook needs: this rank's site group, its size, and each parameter's place in
    the model's parameters() (the engine's flat order)."""

    def __init__(self, group, size: int, params):
        self.group = group
        self.size = size
        self.index = {id(p): i for i, p in enumerate(params)}


def _site_mean_hook(state: _HookState, bucket):
    """DDP communication hook: the bucket's gradients averaged over this rank's site, as the
    engine's intra-DC allreduce averages its flat gradient: the bucket's parameters in the model's
    order (DDP orders and re-orders its buckets by when gradients are ready), summed by Gloo's
    ring, then divided (DDP's own hook divides first). With 3 or more ranks in a site both orders
    change the rounding."""
    if state.size == 1:
        fut = torch.futures.Future()
        fut.set_result(bucket.buffer())
        return fut
    params, grads = bucket.parameters(), bucket.gradients()
    order = sorted(range(len(params)), key=lambda i: state.index[id(params[i])])
    flat = torch.cat([grads[i].reshape(-1) for i in order])
    fut = dist.all_reduce(flat, group=state.group, async_op=True).get_future()

    def mean(f):
        total = f.value()[0].div_(state.size)
        off = 0
        for i in order:
            n = grads[i].numel()
            grads[i].copy_(total[off:off + n].view_as(grads[i]))
            off += n
        return bucket.buffer()

    return fut.then(mean)


def _flat(params) -> torch.Tensor:
    return torch.cat([p.detach().reshape(-1) for p in params]).contiguous()


def _write(params, flat: torch.Tensor) -> None:
    off = 0
    with torch.no_grad():
        for p in params:
            n = p.numel()
            p.copy_(flat[off:off + n].view_as(p))
            off += n


class HierEF:
    """The hook and the rounds of hier_ef_topk_int8 for `model`'s parameters (before DDP wraps it,
    or DDP's module: the same tensors)."""

    def __init__(self, model: torch.nn.Module, sites: Sites, K: int = 16, density: float = 0.01, block: int = 256,
                 values: str = "int8", overlap: bool = True, weights: Optional[List[float]] = None):
        if K < 1:
            raise ValueError(f"K: {K}: must be >= 1")
        if not 0 < density <= 1:
            raise ValueError(f"density: {density}: must be in (0, 1]")
        self.sites, self.K, self.density, self.block, self.values, self.overlap = sites, K, density, block, values, overlap
        self.rank = dist.get_rank()
        if len(sites.site) != dist.get_world_size():
            raise ValueError(f"sites: {len(sites.site)} ranks for a world of {dist.get_world_size()}")
        self.M = sites.count
        self.my_site = sites.site[self.rank]
        self.site_ranks = sites.ranks(self.my_site)
        self.leader = self.site_ranks[0]
        self.leaders = sites.leaders()
        # Every rank creates every group, in the same order.
        self._site_groups = [dist.new_group(sites.ranks(s)) for s in range(self.M)]
        self._fwd_groups = [dist.new_group(sites.ranks(s)) for s in range(self.M)]
        self._leader_group = dist.new_group(self.leaders)
        self.params = [p for p in model.parameters()]
        self.state = _HookState(self._site_groups[self.my_site], len(self.site_ranks), self.params)
        # A site's weight in the means over sites, as the engine's (workload "dc_weights"): equal
        # sites weigh 1 each and the sum is scaled by 1/M; otherwise w_d = n_d / sum n (float32),
        # n_d its ranks (the engine's "workers") unless `weights` gives n_d (e.g. its examples).
        n = weights if weights is not None else [len(sites.ranks(d)) for d in range(self.M)]
        if len(n) != self.M or any(not x > 0 for x in n):
            raise ValueError(f"weights: {n}: one positive weight per site ({self.M})")
        if all(x == n[0] for x in n):
            self._w = [torch.tensor(1.0, dtype=torch.float32)] * self.M
            self._scale = torch.tensor(1.0 / self.M, dtype=torch.float32)
        else:
            self._w = [torch.tensor(x / sum(n), dtype=torch.float32) for x in n]
            self._scale = torch.tensor(1.0, dtype=torch.float32)
        self.hook = _site_mean_hook
        x = _flat(self.params)
        self.xbar = x.clone()
        self.mark = x.clone()
        self.resid = torch.zeros_like(x)
        self.s_prev: Optional[torch.Tensor] = None  # overlap: this site's dequantised round in flight
        self.steps = 0
        self.rounds = 0
        self.wire_bytes_sent = 0                      # this leader's compressed messages, all rounds
        # The round in flight: a thread still exchanging, or its messages once collected.
        self._thread: Optional[threading.Thread] = None
        self._ready: Optional[List[torch.Tensor]] = None
        self._arrived: Optional[List[torch.Tensor]] = None
        self._error: Optional[BaseException] = None

    # ---- the exchange (a thread per round: the leader all-gathers, then forwards in its site) ----

    def _exchange(self, wire: torch.Tensor) -> None:
        try:
            wires: List[Optional[torch.Tensor]] = [None] * self.M
            if self.rank == self.leader:
                got = [None] * self.M
                dist.all_gather_object(got, wire.numpy().tobytes(), group=self._leader_group)
                wires = [torch.frombuffer(bytearray(b), dtype=torch.uint8) for b in got]
            if len(self.site_ranks) > 1:
                box = [[w.numpy().tobytes() for w in wires] if self.rank == self.leader else None]
                dist.broadcast_object_list(box, src=self.leader, group=self._fwd_groups[self.my_site])
                wires = [torch.frombuffer(bytearray(b), dtype=torch.uint8) for b in box[0]]
            self._arrived = wires
        except BaseException as e:  # re-raised in the training thread
            self._error = e

    def _launch(self, wire: torch.Tensor) -> None:
        self._arrived, self._error, self._ready = None, None, None
        self._thread = threading.Thread(target=self._exchange, args=(wire,), name=f"geotb-round-{self.rounds}")
        self._thread.start()

    def _in_flight(self) -> bool:
        return self._thread is not None or self._ready is not None

    def _collect(self) -> List[torch.Tensor]:
        """The messages of the round in flight (waiting for its thread if need be)."""
        if self._ready is None:
            self._thread.join()
            self._thread = None
            if self._error is not None:
                raise RuntimeError(f"geotb_torch: round exchange failed: {self._error}") from self._error
            self._ready = self._arrived
        wires, self._ready = self._ready, None
        return wires

    def _apply(self, wires: List[torch.Tensor], own: torch.Tensor) -> None:
        """xbar += scale sum_d w_d s_d, summed in site order with this site's own dequantised
        values, each product and sum rounded once as the engine rounds them."""
        total = torch.zeros_like(self.xbar)
        for s, w in enumerate(wires):
            if s == self.my_site:
                total.add_(own * self._w[s])
            else:
                decompress_add(w, total, float(self._w[s]))
        self.xbar.add_(total * self._scale)

    # ---- the round ----

    def step(self) -> None:
        """After the optimizer's step: every K steps, a round between the sites."""
        self.steps += 1
        if self.steps % self.K:
            return
        x = _flat(self.params)
        acc = x - self.mark
        wire = compress_ef(acc, self.resid, self.density, self.block, self.values, 0)
        s_cur = torch.zeros_like(x)
        decompress_add(wire, s_cur, 1.0)
        if self.rank == self.leader:
            self.wire_bytes_sent += wire.numel() * (self.M - 1)
        if self.overlap:
            if self._in_flight():
                self._apply(self._collect(), self.s_prev)
            self._launch(wire)
            x = self.xbar + s_cur + self.resid
            self.s_prev = s_cur
        else:
            self._launch(wire)
            self._apply(self._collect(), s_cur)
            x = self.xbar + self.resid
        _write(self.params, x)
        self.mark = x.clone()
        self.rounds += 1

    def finish(self) -> None:
        """Apply the round in flight, then one dense float32 exchange of every site's remaining
        progress: every replica of every site ends with the same model."""
        if self._in_flight():
            self._apply(self._collect(), self.s_prev)
        x = _flat(self.params)
        w = x - self.mark + self.resid
        parts = [torch.zeros_like(w) for _ in range(self.M)]
        if self.rank == self.leader:
            dist.all_gather(parts, w, group=self._leader_group)
        if len(self.site_ranks) > 1:
            stacked = torch.stack(parts)
            dist.broadcast(stacked, src=self.leader, group=self._fwd_groups[self.my_site])
            parts = list(stacked)
        total = torch.zeros_like(w)
        for s in range(self.M):
            total.add_((w if s == self.my_site else parts[s]) * self._w[s])
        self.xbar.add_(total * self._scale)
        x = self.xbar.clone()
        _write(self.params, x)
        self.mark = x.clone()
        self.resid.zero_()

    # ---- checkpoints: the state beside the model's and the optimizer's ----

    def state_dict(self) -> dict:
        """Everything the rounds carry. A round in flight is collected first (its messages are then
        kept, and applied at the next round as they would have been), so a run resumed from this
        state continues bit for bit."""
        pending = None
        if self._in_flight():
            pending = self._collect()
            self._ready = pending
        return {"version": 1, "K": self.K, "density": self.density, "block": self.block, "values": self.values,
                "overlap": self.overlap, "sites": list(self.sites.site), "steps": self.steps, "rounds": self.rounds,
                "xbar": self.xbar.clone(), "mark": self.mark.clone(), "resid": self.resid.clone(),
                "s_prev": None if self.s_prev is None else self.s_prev.clone(),
                "pending": None if pending is None else [w.clone() for w in pending]}

    def load_state_dict(self, sd: dict) -> None:
        if sd.get("version") != 1:
            raise ValueError(f"geotb_torch: checkpoint version {sd.get('version')!r}, expected 1")
        for key in ("K", "density", "block", "values", "overlap"):
            if sd[key] != getattr(self, key):
                raise ValueError(f"geotb_torch: checkpoint {key}={sd[key]!r}, this run {getattr(self, key)!r}")
        if sd["sites"] != list(self.sites.site):
            raise ValueError(f"geotb_torch: checkpoint sites {sd['sites']}, this run {self.sites.site}")
        if self._thread is not None:
            self._collect()
        self.steps, self.rounds = sd["steps"], sd["rounds"]
        self.xbar, self.mark, self.resid = sd["xbar"].clone(), sd["mark"].clone(), sd["resid"].clone()
        self.s_prev = None if sd["s_prev"] is None else sd["s_prev"].clone()
        self._ready = None if sd["pending"] is None else [w.clone() for w in sd["pending"]]
