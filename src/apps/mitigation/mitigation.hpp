// Mitigation: the workflow's actuator. Consumes suspects (network/ids/suspect/**), checks each
// one's history in Data Archives (first offence or repeat), installs a drop rule for it on every
// switch with a hard timeout that grows with each repeat, and publishes every action on
// network/mitigation/action/<mac> (archived: the history the next decision reads). Blocks can be
// listed, added and lifted through the northbound API.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/config.hpp"
#include "core/expected.hpp"
#include "data/due.hpp"
#include "southbound/app.hpp"

namespace sdn::apps::mitigation {

inline constexpr std::string_view kSuspectPattern = "network/ids/suspect/**";
inline constexpr std::string_view kMitigationPattern = "network/mitigation/**";
inline constexpr uint64_t kCookieBase = 0x0500000000000000ULL;  // top byte 0x05: mitigation's range
inline constexpr uint64_t kCookieMask = 0xff00000000000000ULL;

enum class MatchOn : uint8_t { kMac = 0, kIp = 1 };

struct MitigationConfig {
  uint16_t priority = 40000;              // above forwarding (10) and cpam (100/101)
  uint8_t table = 0;
  std::chrono::seconds block{30};         // hard timeout of a first offence
  double repeat_factor = 4;               // each earlier offence multiplies it
  std::chrono::seconds max_block{3600};
  std::chrono::seconds history{86400};    // how far back offences count
  MatchOn match = MatchOn::kMac;          // eth_src, or ipv4_src (the suspect's last IP)
  std::vector<std::string> allow;         // MACs or IPv4 addresses never blocked
  double min_score = 0;                   // suspects scoring at most this are ignored
  std::chrono::milliseconds confirm_timeout{3000};  // barrier wait for the API's block/unblock
};

MitigationConfig read_mitigation_config(core::Config& cfg, std::string_view section = "mitigation");

struct MitigationCounters {
  std::atomic<uint64_t> suspects{0};          // suspect records received
  std::atomic<uint64_t> bad_suspects{0};      // malformed (counted, ignored)
  std::atomic<uint64_t> allowed{0};           // on the allow list: never blocked
  std::atomic<uint64_t> below_min_score{0};
  std::atomic<uint64_t> already_blocked{0};
  std::atomic<uint64_t> blocks{0};            // blocks decided
  std::atomic<uint64_t> repeat_blocks{0};     // of which repeat offences
  std::atomic<uint64_t> rules_installed{0};   // confirmed by a barrier, per switch
  std::atomic<uint64_t> rules_failed{0};
  std::atomic<uint64_t> unblocks{0};
  std::atomic<uint64_t> expired{0};
  std::atomic<uint64_t> history_errors{0};    // archive queries that failed (in-memory history used)
  std::atomic<uint64_t> write_errors{0};
};

// One block, as listed.
struct Block {
  uint64_t id = 0;              // cookie = kCookieBase | id
  std::string mac;              // "00:00:00:00:00:05"
  std::string ip;               // may be empty
  MatchOn match = MatchOn::kMac;
  uint32_t offence = 1;         // 1 = first
  uint32_t hard_timeout_s = 0;
  double score = 0;
  std::string reason;           // "ids" or "api"
  int64_t detected_ns = 0;      // the suspect's detection time (0 for the API)
  int64_t decided_ns = 0;
  int64_t installed_ns = 0;     // every switch confirmed (0 until then)
  int64_t expires_ns = 0;
  std::set<uint64_t> confirmed; // dpids
  std::set<uint64_t> pending;
  nlohmann::json to_json() const;
};

class MitigationService : public std::enable_shared_from_this<MitigationService> {
 public:
  MitigationService(MitigationConfig cfg, std::shared_ptr<data::Due> due);
  ~MitigationService();
  // Subscribes to suspects; `rt` is the switch runtime (set by the first app instance).
  Expected<void, std::string> start(southbound::Runtime& rt);
  void stop();

  // A suspect record's value; the decision and the rules (asynchronous: the action record is
  // published when every switch confirmed).
  void on_suspect(const nlohmann::json& suspect);
  // API: block `addr` (MAC) for `duration` (or the offence-based default); waits for the
  // barriers. Errors name the field.
  Expected<nlohmann::json, std::string> block(const std::string& mac, const std::string& ip,
                                              std::optional<uint32_t> duration_s);
  Expected<nlohmann::json, std::string> unblock(const std::string& mac);
  nlohmann::json blocks_json();
  nlohmann::json stats_json() const;

  // Called by the per-shard app instances.
  void switch_up(southbound::SwitchContext& sw);
  void switch_down(uint64_t dpid);
  void flow_removed(uint64_t dpid, const ofp::FlowRemoved& fr);
  const MitigationConfig& config() const { return cfg_; }

 private:
  struct Decision {
    std::shared_ptr<Block> block;
    bool repeat = false;
  };
  uint32_t offences_in_history(const std::string& mac);
  std::shared_ptr<Block> decide(const std::string& mac, const std::string& ip, double score, int64_t detected_ns,
                                std::string reason, std::optional<uint32_t> duration_s);
  void install(const std::shared_ptr<Block>& b, std::function<void()> on_all_confirmed);
  ofp::FlowMod rule(const Block& b, uint16_t hard_timeout) const;
  void publish(const std::string& action, const Block& b, nlohmann::json extra = {});
  void expire_due(int64_t now_ns);

  MitigationConfig cfg_;
  std::shared_ptr<data::Due> due_;
  southbound::Runtime* rt_ = nullptr;
  data::Due::Subscription sub_;
  MitigationCounters c_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<Block>> active_;   // by MAC
  std::map<std::string, uint32_t> offences_;                // this process's own history, by MAC
  std::set<uint64_t> switches_;
  uint64_t next_id_ = 1;
  std::set<std::string> allow_macs_, allow_ips_;
};

// The per-shard app: forwards switch events to the service.
class Mitigation : public southbound::App {
 public:
  Mitigation(std::shared_ptr<MitigationService> svc, unsigned shard) : svc_(std::move(svc)), shard_(shard) {}
  std::string_view name() const override { return "mitigation"; }
  void on_start(southbound::Runtime& rt, unsigned shard) override;
  void on_stop() override;
  void on_switch_up(southbound::SwitchContext& sw) override { svc_->switch_up(sw); }
  void on_switch_down(uint64_t dpid) override { svc_->switch_down(dpid); }
  void on_flow_removed(southbound::SwitchContext& sw, const ofp::FlowRemoved& fr) override {
    if ((fr.cookie & kCookieMask) == kCookieBase) svc_->flow_removed(sw.dpid(), fr);
  }

 private:
  std::shared_ptr<MitigationService> svc_;
  unsigned shard_;
};

}  // namespace sdn::apps::mitigation
