// Text form of the data plane's ports and links, for the geotb-emulate command line:
//   --port  NAME=DEVICE,SUBNET          e.g. beijing=net_af_packet0,10.77.0.0/24
//   --link  A>B:key=value,...           one direction;  A<>B:...  both directions
// keys: rate (1Gbps; 0bps = unlimited), delay (15ms), jitter (1ms), jitter_kind (uniform|normal),
//       reorder (0|1), loss (1e-4, Bernoulli), ge (p_gb/p_bg/loss_good/loss_bad),
//       queue_bytes, queue_packets, overhead_bytes, duplicate (p), corrupt (p)
// Values with units as in common/units.h (the scenario's units).
//   --change at=10s,link=A>B,rate=..,delay=..,loss=..,up=0|1
#pragma once

#include <string>
#include <vector>

#include "emulator/dpdk/dataplane.h"

namespace geotb::emu {

struct PortArg {
  std::string dc, device;
  Ipv4Prefix subnet;
};
/// Throws std::invalid_argument naming the text.
PortArg parse_port_arg(const std::string& s);
Ipv4Prefix parse_prefix(const std::string& s);
/// Appends one or two LinkSpecs; `dcs` resolves names to port indices.
void parse_link_arg(const std::string& s, const std::vector<std::string>& dcs, std::vector<LinkSpec>& out);
/// The key=value text of `c` (inverse of parse_link_arg's keys; exact: rates and probabilities
/// with 17 significant digits, durations in ns).
std::string link_spec_text(const LinkConfig& c);
/// The key=value text of a change (without link=): "at=...ns,rate=...".
std::string change_spec_text(const LinkChange& c);
/// Adds a timeline change to the matching link(s) in `links`.
void parse_change_arg(const std::string& s, const std::vector<std::string>& dcs, std::vector<LinkSpec>& links);

}  // namespace geotb::emu
