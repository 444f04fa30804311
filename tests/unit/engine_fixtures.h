// Small clusters, workloads and dataset subsets shared by the engine's unit tests
// (engine_test.cc, checkpoint_test.cc, node_faults_test.cc): each test states its numbers, the
// construction lives here once.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include <unistd.h>

#include "engine/cluster.h"
#include "engine/data/fashion_mnist.h"

namespace geotb::engine::fixtures {

/// Two data centers "a" and "b" of `workers` each; LAN and WAN (both directions) at the given
/// rate (bits/s, 0 = unlimited) and one-way delay.
inline ClusterSpec two_dcs(int workers, double lan_bps, std::chrono::nanoseconds lan_delay, double wan_bps,
                           std::chrono::nanoseconds wan_delay) {
  ClusterSpec c;
  c.dcs = {{"a", workers}, {"b", workers}};
  c.lan.rate_bps = lan_bps;
  c.lan.delay = lan_delay;
  model::WanLink w;
  w.a_to_b.rate_bps = w.b_to_a.rate_bps = wan_bps;
  w.a_to_b.delay = w.b_to_a.delay = wan_delay;
  c.wan = {w};
  return c;
}

/// Three data centers "a", "b", "c" of 2 workers each on unequal, asymmetric links: a->b 1 Gbit/s
/// 15 ms, b->a 200 Mbit/s 20 ms; a->c 100 Mbit/s 45 ms, c->a 1 Gbit/s 55 ms; b<->c 50 Mbit/s 60 ms
/// (one way). LAN 100 Gbit/s, 10 us.
inline ClusterSpec triangle() {
  ClusterSpec c;
  c.dcs = {{"a", 2}, {"b", 2}, {"c", 2}};
  c.lan.rate_bps = 100e9;
  c.lan.delay = std::chrono::microseconds(10);
  auto link = [](int a, int b, double ab_bps, int ab_ms, double ba_bps, int ba_ms) {
    model::WanLink w;
    w.a = a;
    w.b = b;
    w.a_to_b.rate_bps = ab_bps;
    w.a_to_b.delay = std::chrono::milliseconds(ab_ms);
    w.b_to_a.rate_bps = ba_bps;
    w.b_to_a.delay = std::chrono::milliseconds(ba_ms);
    return w;
  };
  c.wan = {link(0, 1, 1e9, 15, 200e6, 20), link(0, 2, 100e6, 45, 1e9, 55), link(1, 2, 50e6, 60, 50e6, 60)};
  return c;
}

/// The 784-32-10 MLP, SGD lr 0.05 momentum 0.9, 16 examples per worker and step.
inline WorkloadSpec small_mlp(int steps, uint64_t seed, int eval_points) {
  WorkloadSpec w;
  w.model.hidden = {32};
  w.optimizer.lr = 0.05;
  w.optimizer.momentum = 0.9;
  w.batch_per_worker = 16;
  w.steps = steps;
  w.seed = seed;
  w.eval_points = eval_points;
  return w;
}

/// The 784-64-10 MLP on `device` ("cpu", "cuda", ...), for the device and calibration tests.
inline ModelConfig mlp_on(const std::string& device) {
  ModelConfig m;
  m.hidden = {64};
  m.device = device;
  return m;
}

/// The first `train` and `test` Fashion-MNIST examples, loaded once per pair of sizes.
inline const Datasets& fashion_subset(size_t train, size_t test) {
  static std::mutex mu;
  static std::map<std::pair<size_t, size_t>, Datasets> cache;
  std::lock_guard<std::mutex> lk(mu);
  auto it = cache.find({train, test});
  if (it == cache.end()) {
    Datasets x;
    x.train = load_fashion_mnist(kFashionMnistDir, true, train);
    x.test = load_fashion_mnist(kFashionMnistDir, false, test);
    it = cache.emplace(std::make_pair(train, test), std::move(x)).first;
  }
  return it->second;
}

/// A fresh directory under the system's temporary directory, removed at the end of the test.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    static int n = 0;
    path = std::filesystem::temp_directory_path() /
           ("geotb-test-" + std::to_string(getpid()) + "-" + std::to_string(n++));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string str() const { return path.string(); }
};

}  // namespace geotb::engine::fixtures
