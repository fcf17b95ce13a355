// The CDI name grammar (container-device-interface pkg/parser) shared by generate, validate, list
// and the device-name mapping: kind = vendor/class, fully qualified name = vendor/class=name.
//  - vendor and class: a letter first, a letter or digit last, [A-Za-z0-9_.-] between. gpufrac also
//    requires at least 2 characters each: podman 4.3.1 (CDI library v0.5.2) panics on one.
//    A dot in the class needs cdiVersion 0.6.0 (podman 4.3.1 does not recognise such a name).
//  - device name: a letter or digit first and last, [A-Za-z0-9_.:-] between; one character is fine.
#pragma once

#include <string>
#include <string_view>

#include "core/error.hpp"

namespace gpufrac::cdi {

// The kind gpufrac's specs declare, and its parts.
inline constexpr std::string_view kVendor = "gpufrac.io";
inline constexpr std::string_view kClass = "gpu";
inline constexpr std::string_view kKind = "gpufrac.io/gpu";

inline constexpr const char* kKindForm =
    "vendor/class, each at least 2 characters: a letter first, a letter or digit last, letters, digits, "
    "'_', '.' or '-' between, e.g. gpufrac.io/gpu";
inline constexpr const char* kDeviceNameForm =
    "a letter or digit first and last, letters, digits, '_', '.', ':' or '-' between, e.g. 0-0.25";

struct Kind {
  std::string vendor;
  std::string klass;
  std::string str() const { return vendor + "/" + klass; }
};

struct QualifiedName {
  Kind kind;
  std::string name;
  std::string str() const { return kind.str() + "=" + name; }
};

// "" when valid, else the problem (without the accepted form).
std::string vendor_problem(std::string_view vendor);
std::string class_problem(std::string_view klass);
std::string device_name_problem(std::string_view name);

// Strict parsers: the message quotes the text and names the accepted form.
Result<Kind> parse_kind(std::string_view text);
Result<QualifiedName> parse_qualified_name(std::string_view text);

}  // namespace gpufrac::cdi
