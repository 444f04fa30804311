// The host's CPU and the CPU kernels libtorch's libraries picked for it (the report's
// context.cpu, model::CpuContext): what decides whether two runs trained with the same arithmetic.
#pragma once

#include <string>

#include "model/report.h"

namespace geotb::harness {

/// This process's CPU: /proc/cpuinfo's first "model name" and vector flags, the OpenBLAS core and
/// oneDNN ISA of the libraries loaded in this process (looked up by symbol: absent ones give ""),
/// and ATEN_CPU_CAPABILITY.
model::CpuContext host_cpu();

/// The parts of host_cpu() read from a /proc/cpuinfo text (exposed for tests): "model name" of the
/// first processor, and the vector extensions of its "flags", in a fixed order.
model::CpuContext parse_cpuinfo(const std::string& cpuinfo);

/// oneDNN's dnnl_cpu_isa_t code as a name where every oneDNN version agrees on it ("avx2",
/// "avx512_core", ...), else "0x<hex>".
std::string onednn_isa_name(unsigned code);

}  // namespace geotb::harness
