// Writing files so that a reader (or a crash) never sees half of one.
//
// write_file_atomically: the content goes to a temporary file in the target's directory
// ("<target>.tmp.<pid>.<n>"), is flushed to disk (fsync), then renamed over the target: the
// target is either the old file or the new one. On any failure the temporary file is removed
// (RAII) and the old file is left as it was.
//
// write_new_file: the same, for a file that must not replace anything: "<dir>/<stem><ext>", or
// "<stem>-2<ext>", "<stem>-3<ext>", ... the first name that does not exist, claimed with link(2),
// which never overwrites (two writers racing for one name each get their own).
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace geotb::common {

/// A file could not be written; the message names the path and the system's reason.
class FileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Replaces (or creates) `path` with `content`. The directory must exist. Throws FileError.
/// `mode`: the new file's permissions (less the umask); 0600 for what only its owner may read.
void write_file_atomically(const std::string& path, std::string_view content, unsigned mode = 0666);

/// Creates a new file in `dir` (created if missing) named `stem` + `ext`, with "-2", "-3", ...
/// before `ext` while the name is taken, holding `content`. Returns its path. Throws FileError.
std::string write_new_file(const std::string& dir, const std::string& stem, const std::string& ext,
                           std::string_view content);

}  // namespace geotb::common
