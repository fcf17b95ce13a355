#include "core/ledger/ledger_json_limits.hpp"

#include <algorithm>
#include <set>
#include <tuple>

#include <nlohmann/json.hpp>

#include "core/ledger/ledger_json.hpp"
#include "core/text.hpp"

namespace gpufrac {

using nlohmann::json;

namespace {

// Exact keys of one object, then typed fields; the first problem as "<path>.<key>: <problem>".
class Fields {
 public:
  Fields(const json& obj, std::string path, std::initializer_list<std::string_view> keys) : obj_(obj), path_(path) {
    if (!obj.is_object() || obj.size() != keys.size())
      error_ =
          text::cat(path, ": must be {", text::join(std::vector<std::string>(keys.begin(), keys.end()), ", "), "}");
    for (auto k : keys)
      if (!error_ && !obj.contains(k)) error_ = text::cat(path, ": ", k, " missing");
  }
  std::uint64_t u64(const char* key, std::uint64_t max) {
    if (error_) return 0;
    const json& v = obj_.at(key);
    if (!v.is_number_unsigned() || v.get<std::uint64_t>() > max) fail(key, text::cat("must be an integer 0-", max));
    return error_ ? 0 : v.get<std::uint64_t>();
  }
  std::string str(const char* key, std::size_t max) {
    if (error_) return "";
    const json& v = obj_.at(key);
    if (!v.is_string()) return fail(key, "must be a string"), "";
    const auto& s = v.get_ref<const std::string&>();
    bool ok = s.size() <= max;
    for (unsigned char c : s) ok = ok && c >= 0x20 && c < 0x7f;
    if (!ok) return fail(key, text::cat("must be printable ASCII of at most ", max, " bytes")), "";
    return s;
  }
  void fail(std::string_view key, std::string_view problem) {
    if (!error_) error_ = text::cat(path_, ".", key, ": ", problem);
  }
  const std::optional<std::string>& error() const { return error_; }

 private:
  const json& obj_;
  std::string path_;
  std::optional<std::string> error_;
};

}  // namespace

std::optional<std::pair<std::string_view, std::string_view>> driver_limit_problem(const DriverLimit& l) {
  using P = std::pair<std::string_view, std::string_view>;
  if (!validate_cgroup_path(l.cgroup)) return P{"cgroup", "is not an absolute path without . or .."};
  if (l.soft > l.hard) return P{"soft", "is above hard"};
  return std::nullopt;
}

std::optional<std::pair<std::string_view, std::string_view>> limit_to_clear_problem(const LimitToClear& r) {
  using P = std::pair<std::string_view, std::string_view>;
  if (!r.gpu_uuid.starts_with("GPU-")) return P{"gpu", "must start with GPU-"};
  if (auto p = driver_limit_problem(r.limit)) return p;
  if (r.owner.empty()) return P{"owner", "must not be empty"};
  return std::nullopt;
}

bool duplicate_limits_to_clear(const std::vector<LimitToClear>& records) {
  std::set<std::tuple<std::string_view, std::string_view>> seen;
  for (const auto& r : records)
    if (!seen.emplace(r.gpu_uuid, r.limit.cgroup).second) return true;
  return false;
}

Result<DriverLimit> read_driver_limit(const json& obj, const std::string& path) {
  Fields f(obj, path, {"cgroup", "soft", "hard"});
  DriverLimit l{f.str("cgroup", ledger_max::kCgroup), f.u64("soft", UINT64_MAX), f.u64("hard", UINT64_MAX)};
  if (auto p = f.error() ? std::nullopt : driver_limit_problem(l)) f.fail(p->first, p->second);
  if (f.error()) return internal_error(*f.error());
  return l;
}

Result<std::vector<LimitToClear>> read_limits_to_clear(const json& doc, const std::string& name) {
  const json& list = doc.at("limits_to_clear");
  if (!list.is_array() || list.size() > kMaxLedgerEntries)
    return internal_error(text::cat(name, ": limits_to_clear must be an array of at most ", kMaxLedgerEntries));
  std::vector<LimitToClear> out;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string path = text::cat("limits_to_clear[", i, "]");
    Fields f(list[i], path, {"gpu", "cgroup", "soft", "hard", "owner", "since"});
    LimitToClear r{f.str("gpu", ledger_max::kUuid),
                   {f.str("cgroup", ledger_max::kCgroup), f.u64("soft", UINT64_MAX), f.u64("hard", UINT64_MAX)},
                   f.str("owner", ledger_max::kId + 1 + ledger_max::kInstance),
                   static_cast<std::int64_t>(f.u64("since", INT64_MAX))};
    if (auto p = f.error() ? std::nullopt : limit_to_clear_problem(r)) f.fail(p->first, p->second);
    if (f.error()) return internal_error(text::cat(name, ": ", *f.error()));
    out.push_back(std::move(r));
  }
  if (duplicate_limits_to_clear(out))
    return internal_error(name + ": limits_to_clear: a second record of one GPU and cgroup");
  return out;
}

json driver_limit_to_json(const DriverLimit& l) {
  return {{"cgroup", l.cgroup}, {"soft", l.soft}, {"hard", l.hard}};
}

json limit_to_clear_to_json(const LimitToClear& r) {
  return {{"gpu", r.gpu_uuid},    {"cgroup", r.limit.cgroup}, {"soft", r.limit.soft},
          {"hard", r.limit.hard}, {"owner", r.owner},         {"since", r.since}};
}

}  // namespace gpufrac
