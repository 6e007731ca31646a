// Who should master which switch: rendezvous (highest-random-weight) hashing of (dpid, member),
// bounded so that no member gets more than ceil(switches / members) (nor fewer than floor when
// every member can take every switch). Pure functions: every instance that sees the same
// switches and members computes the same answer.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace sdn::cluster {

// The weight of `member` for switch `dpid` (stable across processes and versions of the code).
uint64_t rendezvous_weight(uint64_t dpid, const std::string& member);

// The member with the highest weight among `members` (empty string when none).
std::string rendezvous_owner(uint64_t dpid, const std::vector<std::string>& members);

// One preferred owner per switch: switches in a fixed pseudo-random order each take their
// highest-weight candidate that still has room (with n = q * m + r over m distinct candidates:
// q switches each, and q + 1 for the first r members to get there, so loads differ by at most
// one when every member can take every switch); a switch whose candidates are all full takes its
// highest-weight one. `candidates[dpid]` = the live members
// that can master it (those connected to it); an empty list means none.
std::map<uint64_t, std::string> assign(const std::map<uint64_t, std::vector<std::string>>& candidates);

}  // namespace sdn::cluster
