#include "cli/status_render.hpp"

#include "cli/status_burst.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <numeric>

#include "cli/table.hpp"
#include "core/enforcement/enforcement.hpp"
#include "core/ledger/ledger_entry.hpp"
#include "core/quantity.hpp"
#include "core/request/compute_share.hpp"
#include "core/text.hpp"

namespace gpufrac::cli {

namespace {

constexpr const char* kReset = "\033[0m";
constexpr int kPalette[] = {2, 3, 4, 5, 6, 1};  // green, yellow, blue, magenta, cyan, red

std::string paint(const StatusStyle& st, const std::string& code, const std::string& text) {
  return st.colour && !text.empty() ? "\033[" + code + "m" + text + kReset : text;
}

enum class Cell { used, reserved, free };

// One run of equal cells, coloured as its share (index) and kind.
std::string cells(const StatusStyle& st, std::size_t share, Cell kind, std::size_t n) {
  if (n == 0) return "";
  const std::string label = share_label(share);
  if (kind == Cell::free) return paint(st, "2", std::string(n, '.'));
  std::string glyph = kind == Cell::used ? label : (label == "#" ? "=" : text::cat(char(label[0] - 'A' + 'a')));
  std::string run;
  for (std::size_t i = 0; i < n; ++i) run += glyph;
  const int c = kPalette[share % std::size(kPalette)];
  return paint(st, kind == Cell::used ? text::cat("1;97;4", c) : text::cat("3", c), run);
}

std::string label_cell(const StatusStyle& st, std::size_t share) {
  return paint(st, text::cat("1;3", kPalette[share % std::size(kPalette)]), share_label(share));
}

std::size_t cell_of(std::uint64_t bytes, std::uint64_t scale, std::size_t width) {
  return scale == 0 ? 0 : static_cast<std::size_t>((static_cast<unsigned __int128>(bytes) * width + scale / 2) / scale);
}

std::string used_text(const DeviceStatus& d) {
  bool known = false;
  std::uint64_t used = 0;
  for (const auto& s : d.shares)
    if (s.used_bytes) {
      known = true;
      used = saturating_add(used, *s.used_bytes);
    }
  return known || d.shares.empty() ? text::format_bytes(used) : "-";
}

std::string device_name(const DeviceStatus& d) {
  if (d.mig) return "MIG " + d.name;
  return d.mig_mode ? d.name + " (MIG mode)" : d.name;
}

bool any_mig(const StatusReport& r) {
  return std::any_of(r.devices.begin(), r.devices.end(), [](const DeviceStatus& d) { return d.mig.has_value(); });
}

// Compute columns appear once any booking holds a compute share (allocation.compute managed, or
// an explicit gpufrac.io/compute).
bool any_compute(const StatusReport& r) {
  auto has = [](const ShareStatus& s) { return s.entry.compute_ppm != 0; };
  for (const auto& d : r.devices)
    if (std::any_of(d.shares.begin(), d.shares.end(), has)) return true;
  return std::any_of(r.unknown.begin(), r.unknown.end(), has);
}

// A share of the GPU's time as the table shows it, booked or achieved: whole percents, one decimal
// where it is not whole ("11.6 %", where format_compute's exact text is "11.6415 %"); JSON keeps ppm.
std::string percent_text(std::uint64_t ppm) {
  const std::uint64_t tenths = (ppm + 500) / 1000;
  return tenths % 10 == 0 ? text::cat(tenths / 10, " %") : text::cat(tenths / 10, ".", tenths % 10, " %");
}

// "30 %", "30 % strict", "30 % strict high"; "-" without a compute share.
std::string compute_text(const LedgerEntry& e) {
  if (e.compute_ppm == 0) return "-";
  std::string out = percent_text(e.compute_ppm);
  if (e.compute_mode != ComputeMode::fair) out += text::cat(" ", to_string(e.compute_mode));
  if (e.priority != ComputePriority::normal) out += text::cat(" ", to_string(e.priority));
  return out;
}

// The GPU (and GI, CI) cells of a device or share.
std::vector<std::string> where(std::uint32_t gpu, const std::optional<MigRef>& mig, bool mig_columns) {
  std::vector<std::string> out{text::cat(gpu)};
  if (mig_columns) {
    out.push_back(mig ? text::cat(mig->gi) : "-");
    out.push_back(mig ? text::cat(mig->ci) : "-");
  }
  return out;
}

std::vector<std::string> header(std::vector<std::string> rest, bool mig_columns) {
  std::vector<std::string> h{"GPU"};
  if (mig_columns) h.insert(h.end(), {"GI", "CI"});
  h.insert(h.end(), rest.begin(), rest.end());
  return h;
}

// The letter of each container (by container key) across the node, in the order the devices list
// their bookings: one container is one letter on every GPU it holds.
using Letters = std::map<std::string, std::size_t>;

Letters share_letters(const StatusReport& r) {
  Letters out;
  for (const auto& d : r.devices)
    for (const auto& s : d.shares) out.try_emplace(container_key(s.entry), out.size());
  return out;
}

std::vector<std::size_t> letters_of(const DeviceStatus& d, const Letters& letters) {
  std::vector<std::size_t> out;
  for (const auto& s : d.shares) out.push_back(letters.at(container_key(s.entry)));
  return out;
}

std::string bar(const DeviceStatus& d, const StatusStyle& st, const std::vector<std::size_t>& letter) {
  const std::size_t w = st.bar_width;
  const std::uint64_t scale = std::max(d.total, d.reserved);
  std::string out = "[";
  std::uint64_t cum = 0;
  std::size_t pos = 0;
  for (std::size_t i = 0; i < d.shares.size(); ++i) {
    const ShareStatus& s = d.shares[i];
    cum = saturating_add(cum, s.entry.bytes);
    const std::size_t end = std::min(w, cell_of(cum, scale, w));
    const std::size_t n = end - std::min(end, pos);
    const std::size_t used = std::min(n, cell_of(std::min(s.used_bytes.value_or(0), s.entry.bytes), scale, w));
    out += cells(st, letter[i], Cell::used, used) + cells(st, letter[i], Cell::reserved, n - used);
    pos = std::max(pos, end);
  }
  return out + cells(st, 0, Cell::free, w - pos) + "]";
}

bool any_sm(const StatusReport& r) {
  return std::any_of(r.devices.begin(), r.devices.end(), [](const DeviceStatus& d) { return d.sm_mode; });
}

// What a GPU's COMPUTE cell says: its time booked, or in MPS mode its SMs ("sm 100 %").
std::string booked_text(const DeviceStatus& d) {
  if (d.mig || d.mig_mode) return "-";
  return d.sm_mode ? "sm " + percent_text(d.compute_booked) : percent_text(d.compute_booked);
}

std::string render_devices(const StatusReport& r, const StatusStyle& st, const Letters& letters) {
  const bool mig = any_mig(r), compute = any_compute(r) || any_sm(r);
  std::vector<std::string> columns{"NAME", "UUID", "USED", "RESERVED", "FREE", "TOTAL", "SHARES"};
  if (compute) columns.insert(columns.end() - 1, "COMPUTE");
  Table t(header(columns, mig));
  for (const auto& d : r.devices) {
    auto row = where(d.gpu_index, d.mig, mig);
    row.insert(row.end(), {paint(st, "1", device_name(d)), short_id(d.uuid, st.no_trunc)});
    if (d.mig_mode)
      row.insert(row.end(), {"-", "-", "-", text::format_bytes(d.total)});
    else
      row.insert(row.end(), {used_text(d), text::format_bytes(d.reserved), text::format_bytes(d.free),
                             text::format_bytes(d.total)});
    // The GPU's time booked (GPUs not in MIG mode; a MIG instance's time is its own).
    if (compute) row.push_back(booked_text(d));
    row.push_back(d.mig_mode ? "-" : text::cat(d.shares.size()));
    t.add(std::move(row));
  }
  auto lines = t.lines();
  std::string out = lines[0] + "\n";
  for (std::size_t i = 0; i < r.devices.size(); ++i) {
    out += lines[i + 1] + "\n";
    if (!r.devices[i].mig_mode) out += "     " + bar(r.devices[i], st, letters_of(r.devices[i], letters)) + "\n";
    if (const auto& why = r.devices[i].compute_tampered; !why.empty())
      out += "     " + paint(st, "31", "compute arbiter tampered with: " + why.front()) +
             (why.size() > 1 ? text::cat(" (and ", why.size() - 1, " more)") : "") + "\n";
    for (const auto& s : r.devices[i].shares) {
      if (!s.region_damaged.empty())
        out += "     " + paint(st, "31", "usage region damaged: " + s.region_damaged) + "\n";
      if (s.swapped) out += "     " + paint(st, "33", swapped_text(s)) + "\n";
    }
  }
  return out;
}

std::string state_text(const std::string& state, const StatusStyle& st) {
  if (state == "running" || state == "prepared") return paint(st, "32", state);
  return paint(st, state == "pending" ? "33" : "31", state);
}

// Who holds a share: the container id (cut as docker does), or a Kubernetes claim as
// <namespace>/<name> (<uid>, its first 8 characters unless --no-trunc).
std::string owner_text(const LedgerEntry& e, bool no_trunc) {
  if (!e.claim_owned()) return short_id(e.container_id, no_trunc);
  return text::cat(e.claim, " (", no_trunc ? e.container_id : e.container_id.substr(0, 8), ")");
}

// One line of the shares table: a booking, or every GPU's booking of a multi-GPU share (their
// per-GPU cells joined with ",", in GPU order).
struct ShareRow {
  std::string label;  // its container's letter, coloured as its cells in the bars
  std::vector<std::string> where;
  const ShareStatus* share;                 // the first member
  std::vector<const ShareStatus*> members;  // every GPU's booking ({share} for a single one)
};

// A per-GPU cell of a row: each member's value, joined with ",".
template <class F>
std::string per_gpu(const ShareRow& r, F cell) {
  std::vector<std::string> out;
  for (const ShareStatus* m : r.members) out.push_back(cell(*m));
  return text::join(out, ",");
}

// The share's compute columns: booked (with a mode or priority other than fair, normal) and what it
// achieved over the last 10 s ("-" while nothing knows).
std::vector<std::string> compute_cells(const ShareStatus& s) {
  return {compute_text(s.entry), s.compute_achieved_ppm ? percent_text(*s.compute_achieved_ppm) : "-"};
}

// Whether a row's share has a burst limit above what it books (a LIMIT column then).
bool any_limit(const std::vector<ShareRow>& rows) {
  return std::any_of(rows.begin(), rows.end(), [](const ShareRow& r) { return r.share->entry.limit_bytes != 0; });
}

std::string render_shares(const std::vector<ShareRow>& rows, bool mig, bool compute, const StatusStyle& st) {
  const bool keys = std::any_of(rows.begin(), rows.end(),
                                [](const ShareRow& r) { return !base_device_key(r.share->entry.device_key).empty(); });
  // Where the driver holds a limit, every share says who holds its own (driver, shim or mig).
  const bool holders =
      std::any_of(rows.begin(), rows.end(), [](const ShareRow& r) { return r.share->entry.driver_limit.has_value(); });
  const bool limits = any_limit(rows);  // RESERVED is then the request
  std::vector<std::string> rest{"CONTAINER"};
  if (keys) rest.push_back("CDI DEVICE");
  for (const char* h : {"REQUEST", "RESERVED", "USED"}) rest.push_back(h);
  if (limits) rest.insert(rest.end() - 1, "LIMIT");
  if (compute) rest.insert(rest.end(), {"COMPUTE", "ACHIEVED (10 s)"});
  for (const char* h : {"SOURCE", "PID", "STATE", "AGE"}) rest.push_back(h);
  if (holders) rest.push_back("ENFORCED BY");
  auto h = header(rest, mig);
  h.insert(h.begin(), "SHARE");
  Table t(h);
  for (const auto& r : rows) {
    const LedgerEntry& e = r.share->entry;
    std::vector<std::string> row{r.label};
    row.insert(row.end(), r.where.begin(), r.where.end());
    row.push_back(owner_text(e, st.no_trunc));
    const std::string_view key = base_device_key(e.device_key);
    if (keys) row.push_back(key.empty() ? "-" : std::string(key));
    row.push_back(e.request);
    row.push_back(per_gpu(r, [](const ShareStatus& m) { return text::format_bytes(m.entry.bytes); }));
    if (limits) row.push_back(per_gpu(r, [](const ShareStatus& m) { return text::format_bytes(m.entry.limit()); }));
    row.push_back(per_gpu(r, [](const ShareStatus& m) { return used_text(m); }));
    if (compute) {
      row.push_back(per_gpu(r, [](const ShareStatus& m) { return compute_cells(m)[0]; }));
      row.push_back(per_gpu(r, [](const ShareStatus& m) { return compute_cells(m)[1]; }));
    }
    for (auto v :
         {std::string(to_string(e.source)), e.pending() ? std::string("-") : text::cat(e.pid),
          r.share->swapped ? paint(st, "33", "SWAPPED") : state_text(r.share->state, st), format_age(r.share->age_s)})
      row.push_back(v);
    if (holders) row.push_back(per_gpu(r, [](const ShareStatus& m) { return to_string(share_holder(m.entry)); }));
    t.add(std::move(row));
  }
  return t.render();
}

// A row per booking, in device order, labelled with its container's letter; a multi-GPU share is
// one row at its first GPU, with every GPU's booking (its later GPUs add no row).
std::vector<ShareRow> share_rows(const StatusReport& r, const StatusStyle& st, bool mig, const Letters& letters) {
  std::vector<ShareRow> rows;
  for (const auto& d : r.devices)
    for (const auto& s : d.shares) {
      const std::string label = label_cell(st, letters.at(container_key(s.entry)));
      if (s.gpus.empty()) {
        rows.push_back({label, where(d.gpu_index, d.mig, mig), &s, {&s}});
        continue;
      }
      if (s.entry.gpu_index != s.gpus.front()) continue;  // shown on its first GPU's line
      ShareRow row{label, where(d.gpu_index, d.mig, mig), &s, {}};
      std::vector<std::string> gpus;
      for (const auto& od : r.devices)
        for (const auto& o : od.shares)
          if (same_multi_gpu_share(s, o)) {
            row.members.push_back(&o);
            gpus.push_back(text::cat(od.gpu_index));
          }
      row.where[0] = text::join(gpus, ",");
      rows.push_back(std::move(row));
    }
  return rows;
}

// GPU instances split into compute instances: their memory, which the compute instances' bookings
// share, and their compute instances ("1c.3g.40gb x3 (2 booked)").
std::string render_split(const StatusReport& r) {
  Table t({"GPU", "GI", "PROFILE", "MEMORY", "BOOKED", "FREE", "COMPUTE INSTANCES"});
  for (std::size_t i = 0; i < r.devices.size(); ++i) {
    const DeviceStatus& d = r.devices[i];
    if (!d.split || (i > 0 && r.devices[i - 1].split && r.devices[i - 1].mig->gi == d.mig->gi &&
                     r.devices[i - 1].gpu_index == d.gpu_index))
      continue;
    std::vector<std::pair<std::string, std::pair<int, int>>> kinds;  // name -> (count, booked)
    for (std::size_t j = i; j < r.devices.size() && r.devices[j].mig && r.devices[j].mig->gi == d.mig->gi &&
                            r.devices[j].gpu_index == d.gpu_index;
         ++j) {
      const DeviceStatus& c = r.devices[j];
      auto it = std::find_if(kinds.begin(), kinds.end(), [&](const auto& k) { return k.first == c.name; });
      if (it == kinds.end()) it = kinds.insert(kinds.end(), {c.name, {0, 0}});
      ++it->second.first;
      it->second.second += !c.shares.empty();
    }
    std::vector<std::string> parts;
    for (const auto& [name, n] : kinds)
      parts.push_back(text::cat(name, n.first > 1 ? text::cat(" x", n.first) : "", " (", n.second, " booked)"));
    t.add({text::cat(d.gpu_index), text::cat(d.mig->gi), d.gi_profile, text::format_bytes(d.total),
           text::format_bytes(d.gi_reserved), text::format_bytes(d.total > d.gi_reserved ? d.total - d.gi_reserved : 0),
           text::join(parts, ", ")});
  }
  return t.empty() ? "" : "\nMIG GPU instances with compute instances (they share its memory)\n" + t.render();
}

// SM sharing: each GPU in MPS mode, its daemon and server, how long it has had no SM share, and when
// it goes back to time sharing (at once for a time share, else at the idle timeout).
std::string render_mps(const StatusReport& r, const StatusStyle& st) {
  Table t({"GPU", "UUID", "MODE", "DAEMON", "SERVER", "STATE", "CLIENTS", "IDLE", "SWITCHES BACK"});
  for (const auto& d : r.devices) {
    if (!d.sm_mode) continue;
    const std::string state = d.mps_state == "FAULT" ? paint(st, "31", d.mps_state) : d.mps_state;
    t.add({text::cat(d.gpu_index), short_id(d.uuid, st.no_trunc), "sm",
           d.mps_daemon_pid ? text::cat(d.mps_daemon_pid) : "-", d.mps_server_pid ? text::cat(*d.mps_server_pid) : "-",
           state, text::cat(d.mps_clients), d.sm_idle_s ? format_age(*d.sm_idle_s) : "-",
           d.sm_switch_back_s ? text::cat("at a time share, or in ", format_age(*d.sm_switch_back_s)) : "-"});
  }
  return t.empty() ? "" : "\nGPUs in SM mode (MPS daemons)\n" + t.render();
}

// Dynamic MIG instances without booking, kept for reuse until mig.idle-timeout.
std::string render_idle(const StatusReport& r, const StatusStyle& st) {
  Table t({"GPU", "GI", "CI", "NAME", "UUID", "STATE", "IDLE"});
  for (const auto& d : r.devices)
    if (d.idle_s && d.mig)
      t.add({text::cat(d.gpu_index), text::cat(d.mig->gi), text::cat(d.mig->ci), device_name(d),
             short_id(d.uuid, st.no_trunc), "idle", format_age(*d.idle_s)});
  return t.empty() ? "" : "\nIdle dynamic MIG instances (kept for reuse)\n" + t.render();
}

}  // namespace

std::string share_label(std::size_t index) {
  return index < 26 ? std::string(1, static_cast<char>('A' + index)) : "#";
}

std::string short_id(std::string_view id, bool no_trunc) {
  const bool generated = id.find_first_not_of("0123456789abcdef") == std::string_view::npos;
  const bool uuid = id.starts_with("GPU-") || id.starts_with("MIG-");
  return std::string(no_trunc || !(generated || uuid) ? id : id.substr(0, kShortIdLength));
}

std::string memory_bar(const DeviceStatus& d, const StatusStyle& st) {
  std::vector<std::size_t> letter(d.shares.size());
  for (std::size_t i = 0; i < letter.size(); ++i) letter[i] = i;
  return bar(d, st, letter);
}

// Bookings on devices the inventory does not list (a GPU removed, or another node's ledger).
std::string render_unknown(const StatusReport& r) {
  std::string out;
  for (const auto& s : r.unknown)
    out += "?: " + s.entry.container_id + " is booked on " + s.entry.device_uuid + ", which this node does not list\n";
  return out;
}

std::string render_status(const StatusReport& r, const StatusStyle& st) {
  std::string out;
  if (r.overcommit != 1.0)
    out += "Overcommit " + text::format_fixed(r.overcommit, 2) + ": FREE counts up to TOTAL x overcommit\n\n";
  const Letters letters = share_letters(r);
  out += render_devices(r, st, letters);
  const bool mig = any_mig(r);
  std::vector<ShareRow> rows = share_rows(r, st, mig, letters);
  for (const auto& s : r.unknown) {
    std::vector<std::string> cell{"?"};
    if (mig) cell.insert(cell.end(), {"-", "-"});
    rows.push_back({"-", cell, &s, {&s}});
  }
  out += rows.empty() ? "\nNo shares.\n" : "\n" + render_shares(rows, mig, any_compute(r), st) + render_unknown(r);
  return out + render_split(r) + render_idle(r, st) + render_mps(r, st);
}

bool colour_wanted(int fd) {
  const char* no_colour = std::getenv("NO_COLOR");
  const char* term = std::getenv("TERM");
  if (no_colour != nullptr && *no_colour != '\0') return false;
  if (term != nullptr && std::string_view(term) == "dumb") return false;
  return ::isatty(fd) == 1;
}

}  // namespace gpufrac::cli
