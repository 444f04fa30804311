// DDP's gradient buckets (torch.nn.parallel.DistributedDataParallel, docs/guide/represented.md).
//
// DDP does not allreduce the gradient in one piece: it cuts it into buckets of at most
// bucket_cap_mb (25 MiB by default), the first one smaller (1 MiB: dist._DEFAULT_FIRST_BUCKET_BYTES)
// so that communication starts early, in the reverse order of the parameters (the backward pass
// produces the last layers' gradients first). Each bucket is allreduced, one after the other on
// one stream, as soon as the backward pass has produced its gradients. What that costs on a WAN:
// every bucket's ring pays its 2 (P - 1) dependent one-way delays, so the delays of a
// 11,200-bucket model (Llama 3 70B) count as much as its bytes.
//
// A plan maps the buckets of the gradient the timing represents (`represented` floats) onto the
// proxy's gradient (`n` floats) that really trains: each group of consecutive buckets reduces a
// slice of the proxy (the proportional one, possibly empty) and stands on the network for its
// buckets' bytes. When the model trains itself (represented == n) every bucket is a group of its
// own: each its own allreduce, exactly as DDP. A represented model's buckets are grouped (at most
// max_groups groups of equal buckets, each of at least 2 when there are 2), so that the host's cost
// does not grow with them: a group's messages stand for its buckets' dependent ring steps
// (RingShape::rounds), which the link model chains (LinkModel::offer_bulk).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace geotb::engine {

struct BucketConfig {
  uint64_t cap_bytes = uint64_t{25} << 20;       ///< bucket_cap_mb (DDP's default 25 MiB)
  uint64_t first_cap_bytes = uint64_t{1} << 20;  ///< the first bucket (DDP's 1 MiB)
};

struct BucketGroup {
  size_t lo = 0;           ///< the proxy's elements [lo, lo + n) it reduces
  size_t n = 0;
  uint64_t elements = 0;   ///< floats of the represented gradient it stands for
  uint64_t buckets = 1;    ///< DDP buckets in it (all of the same size)
};

/// DDP's bucket assignment (c10d compute_bucket_assignment_by_size): the tensors (elements, in
/// parameter order) taken in reverse order, a bucket closed as soon as it holds at least its
/// limit (the first bucket's, then the cap's), so a tensor above the cap is a bucket of its own.
/// An empty list is a flat gradient of `total` elements cut exactly at the limits. Returns the
/// buckets' elements, in the order DDP reduces them.
std::vector<uint64_t> ddp_buckets(const std::vector<uint64_t>& tensors, uint64_t total, const BucketConfig& cfg);

/// The groups, in the order DDP reduces them (from the end of the flat gradient), of the buckets
/// of a gradient of `tensors` (ddp_buckets) standing for the proxy's `n` floats. Their proxy
/// slices partition [0, n) and their elements sum to the represented total. Throws
/// std::invalid_argument if the total is 0 or below n, a cap is 0, or max_groups is 0.
std::vector<BucketGroup> plan_buckets(const std::vector<uint64_t>& tensors, uint64_t total, size_t n,
                                      const BucketConfig& cfg, size_t max_groups);

/// Scenario checks for a bucket size in MiB ("bucket_mb"): empty if valid, else a message naming
/// the field and the value.
std::string check_bucket_mb(double mb);

}  // namespace geotb::engine
