// A dead DC leader's address taken over by its successor (node faults, engine/faults/: under
// per-DC groups the dead leader's lowest surviving site member leads the site from then on). The
// protocol, written once here and applied by both transports that carry it, the in-process fabric
// (emulator/inproc/fabric.h) and the socket transport (engine/transport/socket/):
//
//  * the successor sends each rank that must know (every rank of the other sites) a takeover
//    notice naming the dead rank (encode_takeover_notice), on its own connection to that rank, so
//    that it arrives after whatever the successor sent that rank before and ahead of what it sends
//    after;
//  * a rank that gets the notice addresses the dead rank's messages to the successor from then on,
//    and so those of every rank the dead had taken over before (a chain); its receives from the
//    dead rank take the successor's messages too;
//  * it sends the successor again the last messages it had sent the dead rank, kept for that (the
//    dead may not have taken them before its death: the round in flight it never forwarded); a
//    message the dead had taken is then received twice, and the successor takes what it still
//    needs. From then on it keeps as many of those sent to the successor as it kept for the dead.
//
// TakeoverTable is one rank's part of it: who answers for whom, and what it keeps for a successor.
// Not thread-safe: its owner's lock guards it. No dependencies beyond the standard library.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <optional>
#include <vector>

namespace geotb {

/// The notice's payload: the dead rank, 8 bytes in host order (every rank runs on one host
/// architecture).
inline std::vector<uint8_t> encode_takeover_notice(int dead) {
  const int64_t d = dead;
  std::vector<uint8_t> bytes(sizeof d);
  std::memcpy(bytes.data(), &d, sizeof d);
  return bytes;
}

/// The dead rank a notice names; nothing if `bytes` is not a notice (another length).
inline std::optional<int> decode_takeover_notice(const std::vector<uint8_t>& bytes) {
  int64_t d = 0;
  if (bytes.size() != sizeof d) return std::nullopt;
  std::memcpy(&d, bytes.data(), sizeof d);
  return static_cast<int>(d);
}

/// One rank's taken-over addresses and the messages it keeps for successors. `Kept` is what the
/// owner needs to send one message again; how many it keeps for a destination is its own rule
/// (the fabric: for every rank of another site; the socket transport: for the ranks it was told).
template <class Kept>
class TakeoverTable {
 public:
  /// Where a message to `dst` goes now: `dst`, or the rank that took over its address.
  int address_of(int dst) const {
    const auto it = successor_.find(dst);
    return it == successor_.end() ? dst : it->second;
  }

  /// The rank that took over `src`'s address, if any (its messages stand for `src`'s).
  std::optional<int> successor_of(int src) const {
    const auto it = successor_.find(src);
    if (it == successor_.end()) return std::nullopt;
    return it->second;
  }

  /// A message sent to `dst` (an address already resolved by address_of): the last `keep` of
  /// them are kept (0: none).
  void sent(int dst, Kept k, size_t keep) {
    if (keep == 0) return;
    std::deque<Kept>& q = kept_[dst];
    q.push_back(std::move(k));
    while (q.size() > keep) q.pop_front();
  }

  /// `successor` took over `dead`'s address (its notice arrived): every address `dead` answered
  /// for is `successor`'s now. Returns what was kept for `dead`, oldest first, for the owner to
  /// send `successor` again through its send path (which keeps them again, for `successor`). A
  /// notice naming the successor itself changes nothing.
  std::deque<Kept> taken_over(int dead, int successor) {
    if (dead == successor) return {};
    for (auto& [from, to] : successor_)
      if (to == dead) to = successor;  // a chain: whoever `dead` had taken over
    successor_[dead] = successor;
    std::deque<Kept> again;
    if (auto it = kept_.find(dead); it != kept_.end()) {
      again = std::move(it->second);
      kept_.erase(it);
    }
    return again;
  }

  /// Forget what was kept for `dst` (its new incarnation starts afresh).
  void forget(int dst) { kept_.erase(dst); }

 private:
  std::map<int, int> successor_;  // taken-over address -> the rank that answers for it
  std::map<int, std::deque<Kept>> kept_;
};

}  // namespace geotb
