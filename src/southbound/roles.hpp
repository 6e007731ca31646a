// OpenFlow roles in a cluster of controllers (docs/cluster.md). Every switch connects to every
// sdnator instance; one instance is MASTER of a switch and the others stay connected as SLAVE.
// Who is master is decided outside the runtime, by a RoleArbiter (src/cluster: leases in Redis
// with fencing generations); the runtime carries the decision to the switch in a ROLE_REQUEST
// whose generation_id fences a stale master (OpenFlow 1.3.5, 6.3.6), and only then lets the
// apps act on the switch. Without an arbiter a switch is up as soon as its handshake completes
// (the EQUAL role of a single controller), exactly as before.
#pragma once

#include <cstdint>

namespace sdn::southbound {

enum class Role : uint8_t { kEqual = 0, kMaster = 1, kSlave = 2 };

inline const char* role_name(Role r) {
  switch (r) {
    case Role::kEqual: return "equal";
    case Role::kMaster: return "master";
    case Role::kSlave: return "slave";
  }
  return "?";
}

// What the runtime offers an arbiter. Thread-safe: may be called from any thread.
class RoleSink {
 public:
  virtual ~RoleSink() = default;
  // This instance must now hold `role` on switch `dpid`, fenced by `generation` (carried in the
  // ROLE_REQUEST). `fresh` is true when no instance ever mastered the switch before (no earlier
  // generation): only then does a new master run [southbound] clear_flows_on_connect; a takeover
  // keeps the previous master's flows, so established traffic never stops.
  // Ignored when the switch is not connected to this instance.
  // In the runtime (Controller): always posted to the switch's shard, so it may be called from
  // inside switch_connected; a switch still in its handshake ignores it (counted
  // southbound.role.unknown_switch), and so is kEqual. A newer decision supersedes one whose
  // ROLE_REPLY has not arrived yet. The Controller must outlive every call.
  virtual void set_role(uint64_t dpid, Role role, uint64_t generation, bool fresh) = 0;
};

// What the runtime tells an arbiter. Called on the switch's shard thread; must not block.
class RoleArbiter {
 public:
  virtual ~RoleArbiter() = default;
  // Called once, before the runtime accepts connections.
  virtual void attach(RoleSink* sink) = 0;
  // The switch completed its handshake on this instance (features and ports known) and waits
  // for a role: the arbiter answers with set_role (MASTER or SLAVE), at once or later.
  // May come twice for a dpid without switch_disconnected between: a switch that reconnects
  // replaces its older connection, and the replaced one does not report its close. Treat a
  // repeat as "reconnected, decide again" (the new connection is in standby, EQUAL).
  virtual void switch_connected(uint64_t dpid) = 0;
  // The switch's connection to this instance closed (also when the Controller stops).
  virtual void switch_disconnected(uint64_t dpid) = 0;
  // The switch refused a MASTER request as stale (OFPRRFC_STALE) or answered a write with
  // OFPBRC_IS_SLAVE: another instance holds a newer generation. The arbiter re-checks its lease.
  // In the runtime: `generation` is that of the refused request, or for IS_SLAVE and for Open
  // vSwitch's ROLE_STATUS (sent to the old master when another takes over) that of this
  // instance's latest decision; IS_SLAVE/ROLE_STATUS are reported once per decision. A refused
  // MASTER and a ROLE_STATUS take the switch from the apps at once (standby); after IS_SLAVE
  // the switch stays up until the arbiter's set_role.
  virtual void mastership_refused(uint64_t dpid, uint64_t generation) = 0;
};

}  // namespace sdn::southbound
