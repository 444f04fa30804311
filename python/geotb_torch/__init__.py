"""geotb's hierarchical error-feedback synchronisation for a PyTorch DDP job.

    from geotb_torch import HierEF, sites_from_env
    hier = HierEF(model, sites_from_env(), K=16, density=0.01)   # after init_process_group
    ddp = DDP(model)
    ddp.register_comm_hook(hier.state, hier.hook)                 # every step: allreduce in the site
    ...
    opt.step(); hier.step()                                        # every K steps: a round between sites
    ...
    hier.finish()                                                  # the replicas end identical

The update rule is geotb's engine's (docs/guide/strategies.md, "hier_ef_topk_int8: the update
rule"), with its compression kernels and wire format (geotb_torch._C). docs/guide/comm-hook.md.
"""
from ._C import compress_ef, decompress_add  # noqa: F401
from .hier import HierEF, Sites, sites_from_env  # noqa: F401

__all__ = ["HierEF", "Sites", "sites_from_env", "compress_ef", "decompress_add"]
