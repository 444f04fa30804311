// Message tags. A Transport matches a message by (source rank, tag), a 64-bit number, and delivers
// the messages of one (source, tag) in FIFO order; two exchanges that may be in flight at the same
// time between the same ranks must therefore use different tags. This file names the tag spaces
// instead of packing them into bit fields by hand: every user (a strategy, one collective call, a
// purpose such as "forward to the DC members") takes a named range of a stated size from a
// TagAllocator, and a tag asked for outside its range throws TagError instead of silently landing
// in someone else's range.
//
// Layout: an allocator hands out consecutive ranges of its space in call order, the first at the
// space's base. Every rank that makes the same take() calls in the same order gets the same tags,
// which is how the ranks of a strategy agree on them without talking (every rank runs the same
// steps and rounds). The numbers are internal: they never leave the transport, and a change of
// layout changes no message, size or order.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string_view>

namespace geotb::engine {

/// A tag range was exceeded or over-allocated: a programming error or an absurd size (an
/// invariant, not a recoverable failure).
class TagError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

/// A named range [base, base + size) of tags. `name` must outlive the range (a string literal).
class TagRange {
 public:
  /// Throws TagError if base + size overflows 64 bits.
  TagRange(std::string_view name, uint64_t base, uint64_t size);

  std::string_view name() const { return name_; }
  uint64_t base() const { return base_; }
  uint64_t size() const { return size_; }
  /// The i-th tag of the range, base + i; throws TagError("<name>: tag <i> of <size>") if i >= size.
  uint64_t tag(uint64_t i) const;
  bool contains(uint64_t tag) const { return tag >= base_ && tag - base_ < size_; }
  /// Throws TagError("<name>: <n> tags needed, the range has <size>") if size() < n: a user
  /// checks its range once before sending anything.
  void require(uint64_t n) const;

 private:
  std::string_view name_;
  uint64_t base_, size_;
};

/// Every tag a transport user may take: [0, 2^63).
TagRange all_tags();
/// The two halves of it: a strategy's own messages [0, 2^62), and the intra-DC collective groups
/// that run over the same transport in the virtual-time mode [2^62, 2^63) (collectives/
/// transport_group.h), so the two never share a tag between the same ranks.
TagRange strategy_tags();
TagRange group_tags();

/// The tags above every range a Transport user may take, [2^63, 2^64): each one purpose of the
/// transports and the fault machinery, all named here so that no two collide.
namespace reserved_tags {
inline constexpr uint64_t kBase = uint64_t{1} << 63;
inline constexpr uint64_t kHeartbeat = kBase + 1;   ///< heartbeats (faults/heartbeat.h)
inline constexpr uint64_t kRejoin = kBase + 2;      ///< a restarted worker's hand-over (faults/rejoin.h)
inline constexpr uint64_t kRecovering = kBase + 3;  ///< "recovering" notices (faults/socket_port.h)
inline constexpr uint64_t kTakeover = kBase + 4;    ///< a DC leader's successor's notice (transport.h)
inline constexpr uint64_t kWitness = kBase + 5;     ///< indirect probes between socket transports (socket_transport.h)
inline constexpr uint64_t kSinglesEnd = kBase + 6;  ///< every single tag above is below it
/// The survivors' regroup exchanges after node kills (faults/shrink.cc): [kShrinkBase, 2^64).
inline constexpr uint64_t kShrinkBase = kBase + (uint64_t{1} << 62);
static_assert(kHeartbeat < kRejoin && kRejoin < kRecovering && kRecovering < kTakeover && kTakeover < kWitness &&
                  kWitness < kSinglesEnd,
              "the single reserved tags are distinct");
static_assert(kSinglesEnd <= kShrinkBase, "the single reserved tags lie below the regroup range");
}  // namespace reserved_tags

/// Hands out consecutive, non-overlapping ranges of one space, in call order.
class TagAllocator {
 public:
  /// No default space: a user states its own (strategy_tags(), group_tags(), a collective's
  /// range), so two users of one transport cannot both start at tag 0 by accident.
  explicit TagAllocator(TagRange space) : space_(space) {}

  /// The next `size` tags of the space, named `name` (a string literal); throws
  /// TagError("<space>: <name>: <size> tags, only <left> left") when fewer are left.
  TagRange take(std::string_view name, uint64_t size);
  /// Tags handed out so far, and still free.
  uint64_t used() const { return next_; }
  uint64_t left() const { return space_.size() - next_; }

 private:
  TagRange space_;
  uint64_t next_ = 0;  ///< offset of the next range in space_
};

}  // namespace geotb::engine
