#include "engine/collectives/transport_group.h"

#include <cstring>
#include <string>

#include "engine/collectives/gloo_ring.h"
#include "engine/collectives/ring_allreduce.h"
#include "engine/compute_charge.h"
#include "engine/transport/tags.h"

namespace geotb::engine {

namespace {

class TransportGroup final : public IntraDc {
 public:
  TransportGroup(Transport& t, std::vector<int> members, int index)
      : t_(t), members_(std::move(members)), index_(index) {}

  TransportGroup(Transport& t, std::vector<int> members, int index, uint64_t tags_used)
      : TransportGroup(t, std::move(members), index) {
    if (tags_used > 0) (void)tags_.take("intra_dc.before_shrink", tags_used);
  }
  uint64_t tags_used() const { return tags_.used(); }

  int rank() const override { return index_; }
  int size() const override { return static_cast<int>(members_.size()); }

  void allreduce_mean(float* data, size_t n) override {
    if (members_.size() < 2) return;
    // A represented model too large for Gloo's layout to scale (docs/guide/represented.md):
    // the eager ring, NCCL-like, as a GPU site runs.
    const bool eager = !gloo_ring_represents(n, t_.represent_scale(), members_.size());
    const TagRange r = tags_.take("intra_dc.allreduce", eager ? ring_allreduce_tag_count(members_.size())
                                                             : gloo_ring_tag_count(n, members_.size()));
    try {
      if (eager)
        ring_allreduce_sum(t_, members_, data, n, r);
      else
        gloo_ring_allreduce_sum(t_, members_, data, n, r);
    } catch (const TransportError& e) {
      throw CollectiveError(std::string("intra-DC allreduce: ") + e.what());
    }
    const float group_size = static_cast<float>(members_.size());
    const ComputeRegion region(Work::kReduce, n);
    for (size_t i = 0; i < n; ++i) data[i] /= group_size;  // c10d: sum, then div_(size)
  }

  void allreduce_mean_shaped(float* data, size_t n, const RingShape& shape) override {
    // One bucket the data stands for: as the whole gradient runs (Gloo's ring where its layout
    // scales, every message scaled); else the eager ring carrying the shape's sizes and rounds.
    if (shape_scales(n, shape, t_.represent_scale())) return allreduce_mean(data, n);
    if (members_.size() < 2) return;
    const TagRange r = tags_.take("intra_dc.allreduce", ring_allreduce_tag_count(members_.size()));
    try {
      ring_allreduce_sum(t_, members_, data, n, r, shape);  // the eager ring: rounds are its steps
    } catch (const TransportError& e) {
      throw CollectiveError(std::string("intra-DC allreduce: ") + e.what());
    }
    const float group_size = static_cast<float>(members_.size());
    const ComputeRegion region(Work::kReduce, n);
    for (size_t i = 0; i < n; ++i) data[i] /= group_size;
  }

  void broadcast(float* data, size_t n, int root) override {
    const TagRange r = tags_.take("intra_dc.broadcast", 1);
    const int root_rank = members_.at(static_cast<size_t>(root));
    try {
      if (index_ == root) {
        std::vector<uint8_t> bytes(n * sizeof(float));
        std::memcpy(bytes.data(), data, bytes.size());
        for (size_t i = 0; i < members_.size(); ++i)
          if (static_cast<int>(i) != root) t_.send_data(members_[i], r.tag(0), bytes);
      } else {
        const std::vector<uint8_t> in = t_.recv(root_rank, r.tag(0));
        if (in.size() != n * sizeof(float))
          throw CollectiveError("intra-DC broadcast: " + std::to_string(in.size()) + " bytes, expected " +
                                std::to_string(n * sizeof(float)));
        std::memcpy(data, in.data(), in.size());
      }
    } catch (const TransportError& e) {
      throw CollectiveError(std::string("intra-DC broadcast: ") + e.what());
    }
  }

  void barrier() override {
    float one = 1;
    allreduce_mean(&one, 1);
  }

 private:
  Transport& t_;
  std::vector<int> members_;
  int index_;
  TagAllocator tags_{group_tags()};
};

}  // namespace

std::unique_ptr<IntraDc> make_transport_group(Transport& t, std::vector<int> members, int index) {
  return std::make_unique<TransportGroup>(t, std::move(members), index);
}

std::unique_ptr<IntraDc> shrink_transport_group(const IntraDc& old, Transport& t, std::vector<int> members, int index) {
  const auto* g = dynamic_cast<const TransportGroup*>(&old);
  if (!g) throw CollectiveError("shrink: the intra-DC group is not a transport group (virtual-time embedded mode only)");
  return std::make_unique<TransportGroup>(t, std::move(members), index, g->tags_used());
}

uint64_t transport_group_tags_used(const IntraDc& g) {
  const auto* tg = dynamic_cast<const TransportGroup*>(&g);
  if (!tg) throw CollectiveError("join: the intra-DC group is not a transport group (virtual-time embedded mode only)");
  return tg->tags_used();
}

std::unique_ptr<IntraDc> join_transport_group(Transport& t, std::vector<int> members, int index, uint64_t tags_used) {
  return std::make_unique<TransportGroup>(t, std::move(members), index, tags_used);
}

}  // namespace geotb::engine
