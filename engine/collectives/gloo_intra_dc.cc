// c10d ProcessGroupGloo behind the IntraDc interface.
#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/torch.h>

#include <map>
#include <mutex>

#include "engine/collectives/intra_dc.h"

namespace geotb::engine {

struct StoreHandle {
  c10::intrusive_ptr<::c10d::Store> store;
  // One Gloo TCP device (one event-loop thread) shared by every group of the process: a device
  // per group would add a loop thread per worker, and the workers already outnumber the cores.
  std::mutex mu;
  std::map<std::string, std::shared_ptr<::gloo::transport::Device>> devices;  // by interface
};

std::shared_ptr<StoreHandle> make_inprocess_store() {
  auto h = std::make_shared<StoreHandle>();
  h->store = c10::make_intrusive<::c10d::HashStore>();
  return h;
}

namespace {

class GlooIntraDc final : public IntraDc {
 public:
  GlooIntraDc(const std::shared_ptr<StoreHandle>& store, const std::string& prefix, int rank, int size,
              const GlooOptions& opt)
      : rank_(rank), size_(size) {
    auto opts = ::c10d::ProcessGroupGloo::Options::create();
    opts->timeout = opt.timeout;
    opts->threads = opt.threads;
    {
      std::lock_guard<std::mutex> lk(store->mu);
      auto& dev = store->devices[opt.interface];
      if (!dev) dev = ::c10d::ProcessGroupGloo::createDeviceForInterface(opt.interface);
      opts->devices.push_back(dev);
    }
    auto ps = c10::make_intrusive<::c10d::PrefixStore>(prefix, store->store);
    pg_ = c10::make_intrusive<::c10d::ProcessGroupGloo>(ps, rank, size, opts);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void allreduce_mean(float* data, size_t n) override {
    if (size_ == 1) return;
    std::vector<at::Tensor> ts{torch::from_blob(data, {static_cast<int64_t>(n)})};
    pg_->allreduce(ts)->wait();
    ts[0].div_(static_cast<double>(size_));
  }
  void broadcast(float* data, size_t n, int root) override {
    if (size_ == 1) return;
    std::vector<at::Tensor> ts{torch::from_blob(data, {static_cast<int64_t>(n)})};
    ::c10d::BroadcastOptions o;
    o.rootRank = root;
    pg_->broadcast(ts, o)->wait();
  }
  void barrier() override {
    if (size_ == 1) return;
    pg_->barrier()->wait();
  }

 private:
  int rank_, size_;
  c10::intrusive_ptr<::c10d::ProcessGroupGloo> pg_;
};

}  // namespace

std::unique_ptr<IntraDc> make_gloo_group(const std::shared_ptr<StoreHandle>& store, const std::string& prefix,
                                         int rank, int size, const GlooOptions& opt) {
  return std::make_unique<GlooIntraDc>(store, prefix, rank, size, opt);
}

}  // namespace geotb::engine
