// GEOTB_HD marks small inline functions shared verbatim by host code and CUDA device code, so
// that the CPU and GPU paths evaluate exactly the same expressions.
#pragma once

#if defined(__CUDACC__)
#define GEOTB_HD __host__ __device__
#else
#define GEOTB_HD
#endif
