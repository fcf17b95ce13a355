#include "core/spec/spec_read.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "core/fs.hpp"
#include "core/spec/spec_scan.hpp"
#include "core/text.hpp"

namespace gpufrac {

namespace {

constexpr std::size_t kPiece = 64u << 10;

std::unexpected<Error> named_but_large(const std::string& path, std::size_t max_bytes) {
  return user_error(text::cat(path, ": names gpufrac but is larger than ", max_bytes,
                              " bytes; a spec that asks gpufrac for a GPU must be a regular file of at most ",
                              max_bytes, " bytes"));
}

// Reads a regular file to its end: whole while it fits max_bytes, then scanned piece by piece.
Result<SpecText> read_regular(int fd, const std::string& path, const SpecBounds& b) {
  SpecText out;
  out.text.emplace();
  SpecScanner scanner;  // used once the file outgrows max_bytes
  std::string piece(kPiece, '\0');
  for (std::size_t total = 0;;) {
    const ssize_t n = ::read(fd, piece.data(), piece.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return sys_error(text::cat("cannot read ", path, " to tell whether it asks gpufrac for a GPU"));
    if (n == 0) break;
    const std::string_view got(piece.data(), static_cast<std::size_t>(n));
    total += got.size();
    if (total > b.max_scan_bytes)
      return user_error(text::cat(path, ": larger than ", b.max_scan_bytes,
                                  " bytes, too large to tell whether it asks gpufrac for a GPU; gpufrac-runtime "
                                  "passes on specs of at most that size"));
    if (out.text && out.text->size() + got.size() <= b.max_bytes) {
      out.text->append(got);
      continue;
    }
    if (out.text) {  // outgrown: the text so far goes to the scanner and is dropped
      scanner.feed(*out.text);
      out.text.reset();
    }
    if (scanner.feed(got)) return named_but_large(path, b.max_bytes);
  }
  if (!out.text && scanner.named()) return named_but_large(path, b.max_bytes);
  out.named = out.text && may_name_gpufrac(*out.text);
  return out;
}

}  // namespace

Result<SpecText> read_spec(const std::string& path, const SpecBounds& bounds) {
  // O_NONBLOCK: a FIFO planted at the path must not block the open.
  fs::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (!fd && (errno == ENOENT || errno == ENOTDIR)) return SpecText{};
  if (!fd) return sys_error(text::cat("cannot open ", path, " to tell whether it asks gpufrac for a GPU"));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return sys_error("cannot stat " + path);
  if (S_ISDIR(st.st_mode)) return SpecText{};
  if (!S_ISREG(st.st_mode))
    return user_error(text::cat(path, " is ", fs::file_kind(st.st_mode),
                                ", not a regular file: gpufrac cannot tell whether it asks for a GPU; a spec must "
                                "be a regular file"));
  return read_regular(fd.get(), path, bounds);
}

}  // namespace gpufrac
