// Switch-side controller roles (OpenFlow 1.3.5 6.3.6, 7.3.9): see roles.hpp.
#include "tools/ofbench/roles.hpp"

namespace sdn::ofbench {

const char* ctl_role_name(CtlRole r) {
  switch (r) {
    case CtlRole::kNoChange: return "nochange";
    case CtlRole::kEqual: return "equal";
    case CtlRole::kMaster: return "master";
    case CtlRole::kSlave: return "slave";
  }
  return "?";
}

SwitchRoles::Answer SwitchRoles::request(size_t ch, uint32_t role, uint64_t generation) {
  Answer a;
  if (ch >= roles_.size()) roles_.resize(ch + 1, CtlRole::kEqual);
  if (role > static_cast<uint32_t>(CtlRole::kSlave)) {
    a.ok = false;
    a.error_code = role_err::kBadRole;
    return a;
  }
  const auto r = static_cast<CtlRole>(role);
  if (r == CtlRole::kMaster || r == CtlRole::kSlave) {
    // 6.3.6: stale when generation_is_defined and distance(generation_id, cached) < 0, with
    // distance the difference taken as a signed 64-bit number.
    if (defined_ && static_cast<int64_t>(generation - generation_) < 0) {
      a.ok = false;
      a.error_code = role_err::kStale;
      return a;
    }
    defined_ = true;
    generation_ = generation;
  }
  if (r == CtlRole::kMaster) {
    for (size_t i = 0; i < roles_.size(); ++i) {
      if (i != ch && roles_[i] == CtlRole::kMaster) {
        roles_[i] = CtlRole::kSlave;
        a.demoted = i;
      }
    }
  }
  if (r != CtlRole::kNoChange) roles_[ch] = r;
  a.role = roles_[ch];
  // The reply carries the switch's generation; before any was set, Open vSwitch answers with
  // all ones (the field is undefined then), and so do we.
  a.generation = defined_ ? generation_ : UINT64_MAX;
  return a;
}

void SwitchRoles::reset(size_t ch) {
  if (ch < roles_.size()) roles_[ch] = CtlRole::kEqual;
}

std::optional<size_t> SwitchRoles::master() const {
  for (size_t i = 0; i < roles_.size(); ++i)
    if (roles_[i] == CtlRole::kMaster) return i;
  return std::nullopt;
}

}  // namespace sdn::ofbench
