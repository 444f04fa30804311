// libFuzzer target: the checkpoint readers (engine/checkpoint/file.h), what `geotb run --resume`
// and `geotb worker --resume` read from a checkpoint directory. Input byte 0 selects the reader
// (byte % 3), the rest is the file:
//   0: a rank file as it is (parse_rank_checkpoint: magic, version, checksum, lengths, header);
//   1: a rank file without its last 32 bytes: the target appends their SHA-256, so the fuzzed file
//      passes the checksum and the fuzzer reaches the header and buffer parsing behind it (a valid
//      digest is no proof of a sane file: anyone can compute one);
//   2: a manifest (parse_manifest: "key value" lines).
// A CheckpointError is the expected outcome of a bad file (tests/fuzz/fuzz_util.h). Seeds:
// tests/fuzz/seeds/checkpoint/ (a real checkpoint, trimmed) and make_seeds' synthetic ones.
#include <openssl/evp.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "engine/checkpoint/file.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using geotb::engine::CheckpointError;
  if (size < 1) return 0;
  const int mode = data[0] % 3;
  std::string file(reinterpret_cast<const char*>(data) + 1, size - 1);
  geotb::fuzz::read_one<CheckpointError>([&] {
    if (mode == 2) {
      (void)geotb::engine::parse_manifest(file, "fuzz/manifest");
      return;
    }
    if (mode == 1) {
      unsigned char d[EVP_MAX_MD_SIZE];
      unsigned len = 0;
      if (EVP_Digest(file.data(), file.size(), d, &len, EVP_sha256(), nullptr) != 1) std::abort();
      file.append(reinterpret_cast<const char*>(d), len);
    }
    // The reader gets an exact-size copy: ASan reports any read past the file's end.
    (void)geotb::engine::parse_rank_checkpoint(file, "fuzz/rank-0.ckpt");
  });
  return 0;
}
