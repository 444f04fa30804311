#include "harness/host_cpu.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <array>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

namespace geotb::harness {

namespace {

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  const auto e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

/// The extensions that decide which vector kernels OpenBLAS, ATen and oneDNN run, in this order.
constexpr std::array kVectorFlags = {"sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512dq"};

}  // namespace

model::CpuContext parse_cpuinfo(const std::string& cpuinfo) {
  model::CpuContext c;
  std::istringstream in(cpuinfo);
  std::string line;
  bool have_flags = false;
  while (std::getline(in, line)) {
    if (line.empty() && (!c.model.empty() || have_flags)) break;  // the first processor only
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = trim(line.substr(0, colon));
    const std::string value = trim(line.substr(colon + 1));
    if (key == "model name" && c.model.empty()) c.model = value;
    if (key == "flags" && !have_flags) {
      have_flags = true;
      std::set<std::string> flags;
      std::istringstream words(value);
      for (std::string w; words >> w;) flags.insert(w);
      for (const char* f : kVectorFlags)
        if (flags.count(f)) {
          if (!c.features.empty()) c.features += ' ';
          c.features += f;
        }
    }
  }
  return c;
}

std::string onednn_isa_name(unsigned code) {
  // dnnl_cpu_isa_t values shared by oneDNN 2.x and 3.x (others, e.g. 0xf, mean different ISAs).
  switch (code) {
    case 0x0: return "default";
    case 0x1: return "sse41";
    case 0x3: return "avx";
    case 0x7: return "avx2";
    case 0x27: return "avx512_core";
    case 0x67: return "avx512_core_vnni";
    case 0xe7: return "avx512_core_bf16";
  }
  return fmt::format("{:#x}", code);
}

model::CpuContext host_cpu() {
  std::ifstream f("/proc/cpuinfo");
  std::stringstream text;
  text << f.rdbuf();
  model::CpuContext c = parse_cpuinfo(text.str());
  // Looked up rather than linked: geotb does not depend on OpenBLAS or oneDNN, libtorch does.
  using CoreName = char* (*)();
  if (auto fn = reinterpret_cast<CoreName>(dlsym(RTLD_DEFAULT, "openblas_get_corename")))
    if (const char* name = fn()) c.blas = name;
  using Isa = int (*)();
  if (auto fn = reinterpret_cast<Isa>(dlsym(RTLD_DEFAULT, "dnnl_get_effective_cpu_isa")))
    c.onednn_isa = onednn_isa_name(static_cast<unsigned>(fn()));
  if (const char* v = std::getenv("ATEN_CPU_CAPABILITY")) c.aten_cpu_capability = v;
  return c;
}

}  // namespace geotb::harness
