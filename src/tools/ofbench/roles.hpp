// Switch-side OpenFlow 1.3 controller roles for ofbench's emulated switches (OpenFlow 1.3.5,
// 6.3.6 "Multiple Controllers" and 7.3.9 ROLE_REQUEST): the role each controller connection holds,
// the largest generation_id seen, and what each role may do. Pure (no I/O), so the rules are unit
// tested on their own (tests/unit/tools/ofbench_test.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace sdn::ofbench {

// ofp_controller_role (7.3.9).
enum class CtlRole : uint32_t {
  kNoChange = 0,  // OFPCR_ROLE_NOCHANGE
  kEqual = 1,     // OFPCR_ROLE_EQUAL
  kMaster = 2,    // OFPCR_ROLE_MASTER
  kSlave = 3,     // OFPCR_ROLE_SLAVE
};
const char* ctl_role_name(CtlRole r);

// Error type/codes for roles (7.4.4); src/ofp's err namespace does not carry them.
namespace role_err {
inline constexpr uint16_t kRoleRequestFailed = 11;  // OFPET_ROLE_REQUEST_FAILED
inline constexpr uint16_t kStale = 0;               //   OFPRRFC_STALE: stale generation_id
inline constexpr uint16_t kBadRole = 2;             //   OFPRRFC_BAD_ROLE: role out of range
inline constexpr uint16_t kBrcIsSlave = 10;         // OFPET_BAD_REQUEST / OFPBRC_IS_SLAVE
}  // namespace role_err

class SwitchRoles {
 public:
  explicit SwitchRoles(size_t channels = 1) : roles_(channels, CtlRole::kEqual) {}

  struct Answer {
    bool ok = true;
    CtlRole role = CtlRole::kEqual;  // ROLE_REPLY: the channel's role after the request
    uint64_t generation = 0;         // ROLE_REPLY generation_id
    uint16_t error_code = 0;         // !ok: OFPRRFC_* (type OFPET_ROLE_REQUEST_FAILED)
    std::optional<size_t> demoted;   // a MASTER request turned this other channel into a SLAVE
  };
  // A ROLE_REQUEST on channel `ch`. MASTER and SLAVE carry a generation_id that must not be older
  // than the largest one seen (compared as a signed 64-bit distance, which survives wrap-around);
  // a stale one is refused and changes nothing. A new MASTER demotes the previous master to
  // SLAVE. EQUAL ignores the generation; NOCHANGE only asks.
  Answer request(size_t ch, uint32_t role, uint64_t generation);
  // The channel's connection closed: a new connection starts EQUAL (6.3.6). The largest
  // generation seen is the switch's and is kept.
  void reset(size_t ch);

  CtlRole role(size_t ch) const { return ch < roles_.size() ? roles_[ch] : CtlRole::kEqual; }
  // A SLAVE may not change the switch: FLOW_MOD, PACKET_OUT, GROUP_MOD, METER_MOD, PORT_MOD and
  // TABLE_MOD are refused with OFPBRC_IS_SLAVE.
  bool may_modify(size_t ch) const { return role(ch) != CtlRole::kSlave; }
  // Asynchronous messages under the default asynchronous configuration (7.3.10): PACKET_IN and
  // FLOW_REMOVED go to MASTER and EQUAL channels, not to SLAVEs.
  bool gets_async(size_t ch) const { return role(ch) != CtlRole::kSlave; }
  std::optional<size_t> master() const;
  bool generation_defined() const { return defined_; }
  uint64_t generation() const { return generation_; }
  size_t channels() const { return roles_.size(); }

 private:
  std::vector<CtlRole> roles_;
  bool defined_ = false;
  uint64_t generation_ = 0;
};

}  // namespace sdn::ofbench
