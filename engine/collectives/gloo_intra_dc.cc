// c10d ProcessGroupGloo behind the IntraDc interface.
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/torch.h>

#include "engine/collectives/c10d_store_impl.h"
#include "engine/collectives/intra_dc.h"

namespace geotb::engine {

namespace {

template <class F>
void collective(const char* what, const std::string& group, F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    throw CollectiveError(std::string(what) + " in group " + group + ": " + c10_message(e));
  }
}

class GlooIntraDc final : public IntraDc {
 public:
  GlooIntraDc(const std::shared_ptr<StoreHandle>& store, const std::string& prefix, int rank, int size,
              const GlooOptions& opt)
      : rank_(rank), size_(size), name_(prefix) {
    auto opts = ::c10d::ProcessGroupGloo::Options::create();
    opts->timeout = opt.timeout;
    opts->threads = opt.threads;
    collective("joining", prefix, [&] {
      {
        std::lock_guard<std::mutex> lk(store->mu);
        auto& dev = store->devices[opt.hostname.empty() ? "if:" + opt.interface : "host:" + opt.hostname];
        if (!dev)
          dev = opt.hostname.empty() ? ::c10d::ProcessGroupGloo::createDeviceForInterface(opt.interface)
                                     : ::c10d::ProcessGroupGloo::createDeviceForHostname(opt.hostname);
        opts->devices.push_back(dev);
      }
      auto ps = c10::make_intrusive<::c10d::PrefixStore>(prefix, store->store);
      pg_ = c10::make_intrusive<::c10d::ProcessGroupGloo>(ps, rank, size, opts);
    });
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void allreduce_mean(float* data, size_t n) override {
    if (size_ == 1) return;
    std::vector<at::Tensor> ts{torch::from_blob(data, {static_cast<int64_t>(n)})};
    collective("allreduce", name_, [&] { pg_->allreduce(ts)->wait(); });
    ts[0].div_(static_cast<double>(size_));
  }
  void broadcast(float* data, size_t n, int root) override {
    if (size_ == 1) return;
    std::vector<at::Tensor> ts{torch::from_blob(data, {static_cast<int64_t>(n)})};
    ::c10d::BroadcastOptions o;
    o.rootRank = root;
    collective("broadcast", name_, [&] { pg_->broadcast(ts, o)->wait(); });
  }
  void barrier() override {
    if (size_ == 1) return;
    collective("barrier", name_, [&] { pg_->barrier()->wait(); });
  }

 private:
  int rank_, size_;
  std::string name_;
  c10::intrusive_ptr<::c10d::ProcessGroupGloo> pg_;
};

}  // namespace

std::unique_ptr<IntraDc> make_gloo_group(const std::shared_ptr<StoreHandle>& store, const std::string& prefix,
                                         int rank, int size, const GlooOptions& opt) {
  return std::make_unique<GlooIntraDc>(store, prefix, rank, size, opt);
}

}  // namespace geotb::engine
