#include "core/ledger/ledger_entry.hpp"

#include "core/text.hpp"

namespace gpufrac {

const char* to_string(BookingSource s) {
  switch (s) {
    case BookingSource::wrapper:
      return "wrapper";
    case BookingSource::cdi:
      return "cdi";
    case BookingSource::dra:
      return "dra";
    case BookingSource::hook:
      break;
  }
  return "hook";
}

std::optional<BookingSource> booking_source_from(std::string_view s) {
  if (s == "hook") return BookingSource::hook;
  if (s == "wrapper") return BookingSource::wrapper;
  if (s == "cdi") return BookingSource::cdi;
  if (s == "dra") return BookingSource::dra;
  return std::nullopt;
}

Grant grant_of(const LedgerEntry& e) {
  return Grant{e.device_uuid,
               e.gpu_index,
               e.gpu_uuid,
               e.mig,
               e.bytes,
               e.exclusive,
               text::cat("existing booking of ", e.container_id, " (", e.request, ")"),
               e.compute_ppm,
               e.compute_mode,
               e.priority,
               e.limit_bytes,
               e.wait_ms};
}

std::string gpus_device_key(std::string_view base, std::size_t k) {
  return base.empty() ? text::cat("gpus/", k) : text::cat(base, "/gpus/", k);
}

std::optional<GpusKey> parse_gpus_device_key(std::string_view key) {
  const auto at = key.rfind("gpus/");
  if (at == std::string_view::npos || (at != 0 && key[at - 1] != '/')) return std::nullopt;
  const std::string_view digits = key.substr(at + 5);
  auto k = text::parse_u64(digits);
  if (!k || *k >= 64 || (digits.size() > 1 && digits[0] == '0')) return std::nullopt;
  return GpusKey{key.substr(0, at == 0 ? 0 : at - 1), static_cast<std::size_t>(*k)};
}

std::string_view base_device_key(std::string_view key) {
  auto k = parse_gpus_device_key(key);
  return k ? k->base : key;
}

namespace {

bool id_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
}

bool alnum(char c) {
  return id_char(c) && c != '_' && c != '.' && c != '-';
}

}  // namespace

Result<> validate_container_id(std::string_view id) {
  bool ok = !id.empty() && id.size() <= 128 && alnum(id[0]) && id.find("..") == std::string_view::npos;
  for (char c : id) ok = ok && id_char(c);
  if (!ok)
    return user_error("container id " + text::quote(id) +
                      " is not valid; use 1-128 characters [A-Za-z0-9_.-] starting with a letter or digit, "
                      "without \"..\"");
  return {};
}

Result<> validate_instance(std::string_view instance) {
  bool ok = !instance.empty() && instance.size() <= 64 && instance[0] >= 'a' && instance[0] <= 'z';
  for (char c : instance) ok = ok && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-');
  if (!ok)
    return user_error("instance " + text::quote(instance) +
                      " is not valid; use 1-64 characters [a-z0-9-] starting with a letter");
  return {};
}

Result<> validate_optional_instance(std::string_view instance) {
  return instance.empty() ? Result<>{} : validate_instance(instance);
}

std::string process_instance(std::int64_t pid, std::uint64_t pid_start) {
  return text::cat("p", pid, "-", pid_start);
}

std::string container_key(std::string_view container_id, std::string_view instance) {
  return instance.empty() ? std::string(container_id) : text::cat(container_id, "@", instance);
}

Result<> validate_container_key(std::string_view key) {
  const auto at = key.find('@');
  if (auto r = validate_container_id(key.substr(0, at)); !r) return r;
  if (at == std::string_view::npos) return {};
  return validate_instance(key.substr(at + 1));
}

Result<> validate_device_key(std::string_view key) {
  bool ok = key.size() <= 128;
  for (unsigned char c : key) ok = ok && c > 0x20 && c < 0x7f && c != '"' && c != '\\' && c != '\'';
  if (!ok)
    return user_error("device key " + text::quote(key) +
                      " is not valid; use at most 128 printable ASCII characters without spaces or quotes");
  return {};
}

Result<> validate_claim_name(std::string_view claim) {
  // A namespace is a DNS label (<= 63), a name a DNS subdomain (<= 253).
  const auto slash = claim.find('/');
  const bool ok = slash != std::string_view::npos && slash > 0 && slash <= 63 && slash + 1 < claim.size() &&
                  claim.size() - slash - 1 <= 253 &&
                  claim.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789.-/") == std::string_view::npos &&
                  claim.find('/', slash + 1) == std::string_view::npos;
  if (!ok) return user_error(text::cat("claim ", text::quote(claim), " is not <namespace>/<name>"));
  return {};
}

Result<> validate_cgroup_path(std::string_view path) {
  bool ok = path.size() <= 1024 && path.starts_with('/');
  for (unsigned char c : path) ok = ok && c >= 0x20 && c < 0x7f && c != '"' && c != '\\';
  if (ok && path.size() > 1)  // "/" alone is the root; every other component is a name
    for (const auto& seg : text::split(path.substr(1), '/')) ok = ok && !seg.empty() && seg != "." && seg != "..";
  if (!ok)
    return user_error(text::cat("cgroup path ", text::quote(path),
                                " is not valid; use an absolute path of at most 1024 printable characters, without "
                                "quotes, backslashes, empty, . or .. components"));
  return {};
}

Result<> validate_kube_uid(std::string_view uid, std::string_view what) {
  if (uid.empty() || uid.size() > 64 || uid.find_first_not_of("0123456789abcdef-") != std::string_view::npos)
    return user_error(text::cat(what, " ", text::quote(uid), " is not a uid; use the object's metadata.uid"));
  return {};
}

}  // namespace gpufrac
