// The propagation delay line of one link direction: mbufs waiting for their release time.
//
// Release times come from the link model in non-decreasing order unless reordering is enabled,
// so the common case is a FIFO ring; with reordering it is a binary min-heap on release time.
// Capacity is fixed at construction (the mbuf pool bounds how many frames can ever be in
// flight), so push/pop never allocate. The release time of each mbuf lives in an mbuf dynfield.
#pragma once

#include <rte_mbuf.h>
#include <rte_mbuf_dyn.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace geotb::emu {

class DelayLine {
 public:
  /// `release_off`: offset of the uint64_t release-time dynfield (nanoseconds).
  DelayLine(size_t capacity, bool reorder, int release_off)
      : reorder_(reorder), off_(release_off) {
    size_t cap = 16;
    while (cap < capacity) cap *= 2;
    slots_.resize(cap);
  }
  static uint64_t& release_of(rte_mbuf* m, int off) { return *RTE_MBUF_DYNFIELD(m, off, uint64_t*); }

  bool full() const { return size_ == slots_.size(); }
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }

  /// False if full (the caller drops and counts the frame).
  bool push(rte_mbuf* m, uint64_t release_ns) {
    if (full()) return false;
    release_of(m, off_) = release_ns;
    if (!reorder_) {
      slots_[(head_ + size_) & (slots_.size() - 1)] = m;
    } else {
      slots_[size_] = m;
      std::push_heap(slots_.begin(), slots_.begin() + static_cast<std::ptrdiff_t>(size_ + 1), later());
    }
    ++size_;
    return true;
  }
  /// Release time of the next frame; only valid when !empty().
  uint64_t next_release() { return release_of(front(), off_); }
  rte_mbuf* front() { return reorder_ ? slots_[0] : slots_[head_]; }
  /// Put back a frame just popped (a tx ring was full): it becomes the next frame again.
  void unpop(rte_mbuf* m) {
    if (!reorder_) {
      head_ = (head_ + slots_.size() - 1) & (slots_.size() - 1);
      slots_[head_] = m;
      ++size_;
    } else {
      push(m, release_of(m, off_));
    }
  }
  /// Removes every frame whose release time is after `t` and hands each to `drop` (a link cut at
  /// t). FIFO: releases are non-decreasing, so they are the newest frames; heap: a scan.
  /// Returns how many were removed.
  template <typename F>
  size_t remove_released_after(uint64_t t, F&& drop) {
    size_t n = 0;
    if (!reorder_) {
      while (size_ > 0) {
        rte_mbuf* m = slots_[(head_ + size_ - 1) & (slots_.size() - 1)];
        if (release_of(m, off_) <= t) break;
        --size_;
        drop(m);
        ++n;
      }
      return n;
    }
    size_t kept = 0;
    for (size_t i = 0; i < size_; ++i) {
      rte_mbuf* m = slots_[i];
      if (release_of(m, off_) > t) {
        drop(m);
        ++n;
      } else {
        slots_[kept++] = m;
      }
    }
    size_ = kept;
    std::make_heap(slots_.begin(), slots_.begin() + static_cast<std::ptrdiff_t>(size_), later());
    return n;
  }
  rte_mbuf* pop() {
    rte_mbuf* m;
    if (!reorder_) {
      m = slots_[head_];
      head_ = (head_ + 1) & (slots_.size() - 1);
    } else {
      std::pop_heap(slots_.begin(), slots_.begin() + static_cast<std::ptrdiff_t>(size_), later());
      m = slots_[size_ - 1];
    }
    --size_;
    return m;
  }

 private:
  struct Later {
    int off;
    bool operator()(rte_mbuf* a, rte_mbuf* b) const { return release_of(a, off) > release_of(b, off); }
  };
  Later later() const { return Later{off_}; }
  bool reorder_;
  int off_;
  std::vector<rte_mbuf*> slots_;
  size_t head_ = 0, size_ = 0;
};

}  // namespace geotb::emu
