// Errors as values: every fallible function returns Result<T>. An Error carries the errno (0 when
// none), a one-line message that names the thing at fault, and whether the user can fix it.
#pragma once

#include <cerrno>
#include <cstring>
#include <expected>
#include <string>
#include <string_view>
#include <utility>

namespace gpufrac {

// Exit status convention shared by every program (DESIGN.md "Conventions").
enum class ErrorKind {
  user = 1,      // bad input, no capacity, policy refusal: exit 1
  internal = 2,  // environment or bug: exit 2
};

struct Error {
  std::string message;
  int err = 0;  // errno at the point of failure, 0 when not a system error
  ErrorKind kind = ErrorKind::internal;

  // Prefixes context: "while X: <message>". Returns *this for chaining in return statements.
  Error& wrap(std::string_view context) & {
    message = std::string(context) + ": " + message;
    return *this;
  }
  Error&& wrap(std::string_view context) && { return std::move(wrap(context)); }
  int exit_code() const { return static_cast<int>(kind); }
};

template <class T = void>
using Result = std::expected<T, Error>;

// A user-fixable refusal (exit 1): bad annotation, no capacity, policy.
inline std::unexpected<Error> user_error(std::string message) {
  return std::unexpected(Error{std::move(message), 0, ErrorKind::user});
}

// An environment or internal failure (exit 2) without an errno.
inline std::unexpected<Error> internal_error(std::string message) {
  return std::unexpected(Error{std::move(message), 0, ErrorKind::internal});
}

// A failed system call: captures errno now and appends strerror.
inline std::unexpected<Error> sys_error(std::string message, int err = errno) {
  message += ": ";
  message += std::strerror(err);
  return std::unexpected(Error{std::move(message), err, ErrorKind::internal});
}

// Propagates an error from a Result with added context.
template <class T>
std::unexpected<Error> wrap_error(const Result<T>& r, std::string_view context) {
  Error e = r.error();
  return std::unexpected(std::move(e.wrap(context)));
}

}  // namespace gpufrac

// Inside a function returning Result<...>: evaluates `expr` (a Result), returns its error, or
// moves its value into `target`. For parsers that fill many fields one by one.
#define GPUFRAC_TRY_ASSIGN(target, expr)                             \
  do {                                                               \
    auto gpufrac_try_ = (expr);                                      \
    if (!gpufrac_try_) return std::unexpected(gpufrac_try_.error()); \
    target = std::move(*gpufrac_try_);                               \
  } while (0)
