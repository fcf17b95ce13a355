// The MIG profile name grammar (NVIDIA go-nvlib parseMigProfile): [<C>c.]<G>g.<GB>gb[(+|-)attr[,attr]]
// with attributes me, me.all and gfx, never both + and -. Used by the gpufrac.io/mig-profile
// annotation and anything else that names a profile.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/error.hpp"

namespace gpufrac {

inline constexpr const char* kMigProfileForm =
    "[<C>c.]<G>g.<GB>gb with optional +attr or -attr (me, me.all, gfx), e.g. 1g.10gb or 1g.10gb+me";

// Canonical name of a valid profile: the "<C>c." prefix is dropped when C == G, so "3c.3g.20gb"
// and "3g.20gb" name the same profile. The message names the form; callers prefix the field.
Result<std::string> canonical_mig_profile(std::string_view text);
// The canonical name of a profile as NVML reports it, or that name unchanged when it is outside the
// grammar (compared with a request's canonical name, it then matches none).
std::string canonical_mig_profile_or_same(std::string_view name);

}  // namespace gpufrac
