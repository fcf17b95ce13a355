// The CRI plugin section a containerd drop-in repeats, and the drop-in's text (pure). Internal to
// containerd.cpp; split out to keep one concern per file.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "engine-config/toml_lite.hpp"

namespace gpufrac::engine_config::detail {

// What the drop-in takes from the file that last set the CRI plugin.
struct CriSection {
  std::string source;     // that file ("" when none sets the plugin)
  std::string text;       // its CRI tables, verbatim, without any runtimes.gpufrac table
  bool has_runc = false;  // it defines runtimes.runc
  std::string default_runtime = "runc";
  std::string runc_type;                  // runtimes.runc.runtime_type value text ("" when unset)
  std::vector<std::string> runc_options;  // runtimes.runc.options statements except BinaryName
  // CDI (plugins.<cri>.enable_cdi, cdi_spec_dirs), for render_drop_in to turn it on.
  std::size_t root_at = std::string::npos;  // offset in text just after the [plugins.<cri>] header
  std::size_t enable_cdi_at = 0;            // offset of the enable_cdi statement in text
  std::string enable_cdi_raw;               // that statement ("" when unset)
  std::optional<bool> enable_cdi;           // its value when a boolean
  bool has_cdi_dirs = false;                // cdi_spec_dirs is set
};

// CDI wanted in the drop-in: spec_dirs empty means leave enable_cdi as the source has it.
struct CdiWanted {
  std::vector<std::string> spec_dirs;
};

// plugins.<cri> for a config version.
toml::KeyPath cri_path(int version);
// True when any statement of the file sets something under plugins.<cri>.
bool sets_plugin(const std::vector<toml::Statement>& doc, const toml::KeyPath& plugin);
// Extracts the section. Refused: CRI keys set with dotted keys from a table outside the plugin,
// and values (inline tables) that the gpufrac tables would have to extend.
Result<CriSection> extract_cri(const std::vector<toml::Statement>& doc, const std::string& file, int version);

// With cdi.spec_dirs set, CDI is turned on where it is off: enable_cdi = true (when false, or unset on
// version 2, where containerd 1.7 defaults it to false; 2.x defaults it on) and cdi_spec_dirs when
// unset.
std::string render_drop_in(const CriSection& cri, int version, const std::string& runtime_path,
                           const CdiWanted& cdi = {});

}  // namespace gpufrac::engine_config::detail
