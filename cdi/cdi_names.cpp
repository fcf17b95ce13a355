#include "cdi/cdi_names.hpp"

#include "core/text.hpp"

namespace gpufrac::cdi {

namespace {

bool is_letter(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_alnum(char c) {
  return is_letter(c) || is_digit(c);
}

// vendor or class (which = "vendor" / "class"); dots are allowed in both (a dot in the class
// needs cdiVersion 0.6.0, which the version check reports).
std::string qualifier_problem(std::string_view s, std::string_view which) {
  if (s.empty()) return text::cat(which, " is empty");
  if (s.size() < 2) return text::cat(which, " ", text::quote(s), " has one character (podman 4.3.1 panics on it)");
  if (!is_letter(s.front())) return text::cat(which, " ", text::quote(s), " does not start with a letter");
  if (!is_alnum(s.back())) return text::cat(which, " ", text::quote(s), " does not end with a letter or digit");
  for (char c : s.substr(1, s.size() - 2))
    if (!is_alnum(c) && c != '_' && c != '.' && c != '-')
      return text::cat(which, " ", text::quote(s), " contains ", text::quote(std::string_view(&c, 1)));
  return "";
}

}  // namespace

std::string vendor_problem(std::string_view vendor) {
  return qualifier_problem(vendor, "vendor");
}

std::string class_problem(std::string_view klass) {
  return qualifier_problem(klass, "class");
}

std::string device_name_problem(std::string_view name) {
  if (name.empty()) return "the name is empty";
  if (!is_alnum(name.front())) return "it does not start with a letter or digit";
  if (!is_alnum(name.back())) return "it does not end with a letter or digit";
  for (char c : name)
    if (!is_alnum(c) && c != '_' && c != '.' && c != ':' && c != '-')
      return text::cat("it contains ", text::quote(std::string_view(&c, 1)));
  return "";
}

Result<Kind> parse_kind(std::string_view text) {
  auto slash = text.find('/');
  if (slash == std::string_view::npos)
    return user_error(text::cat("kind ", text::quote(text), " has no '/'; use ", kKindForm));
  Kind k{std::string(text.substr(0, slash)), std::string(text.substr(slash + 1))};
  std::string problem = vendor_problem(k.vendor);
  if (problem.empty()) problem = class_problem(k.klass);
  if (!problem.empty()) return user_error(text::cat("kind ", text::quote(text), ": ", problem, "; use ", kKindForm));
  return k;
}

Result<QualifiedName> parse_qualified_name(std::string_view text) {
  auto eq = text.find('=');
  if (eq == std::string_view::npos)
    return user_error(
        text::cat(text::quote(text), " is not a CDI device name; use vendor/class=name, e.g. ", kKind, "=0-0.25"));
  auto kind = parse_kind(text.substr(0, eq));
  if (!kind) return std::unexpected(kind.error());
  std::string_view name = text.substr(eq + 1);
  if (std::string problem = device_name_problem(name); !problem.empty())
    return user_error(text::cat("device name ", text::quote(name), ": ", problem, "; use ", kDeviceNameForm));
  return QualifiedName{*kind, std::string(name)};
}

}  // namespace gpufrac::cdi
