// ofbench's pure pieces: the emulated hosts' DNS client against the controller's DNS
// encoder, /proc/<pid>/stat parsing, the latency statistics, and the emulated switches'
// controller roles (OpenFlow 1.3.5 6.3.6).
#include <gtest/gtest.h>

#include "pkt/addr.hpp"
#include "pkt/dns.hpp"
#include "tools/ofbench/bench.hpp"
#include "tools/ofbench/procstat.hpp"
#include "tools/ofbench/roles.hpp"

namespace sdn::ofbench {
namespace {

TEST(OfbenchDns, QueryParsesAsTheControllerSeesIt) {
  const Bytes q = dns_query(0x1234, "h17.cpam.lan");
  auto parsed = pkt::parse_dns_query(q);
  ASSERT_TRUE(parsed) << pkt::to_string(parsed.error());
  EXPECT_EQ(parsed->id, 0x1234);
  EXPECT_EQ(parsed->name, "h17.cpam.lan");
  EXPECT_EQ(parsed->qtype, 1);
}

TEST(OfbenchDns, AnswerFromTheControllerEncoder) {
  auto q = pkt::parse_dns_query(dns_query(7, "h1.cpam.lan"));
  ASSERT_TRUE(q);
  const pkt::Ipv4Addr vip = pkt::ipv4(10, 0, 128, 9);
  const Bytes resp = pkt::build_dns_response(*q, 0, std::span<const pkt::Ipv4Addr>(&vip, 1), 30);
  auto a = parse_dns_answer(resp);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->id, 7);
  EXPECT_EQ(a->rcode, 0);
  ASSERT_TRUE(a->address);
  EXPECT_EQ(*a->address, vip.value);
  EXPECT_EQ(a->ttl, 30u);
}

TEST(OfbenchDns, NxdomainHasNoAddress) {
  auto q = pkt::parse_dns_query(dns_query(9, "nobody.cpam.lan"));
  ASSERT_TRUE(q);
  const Bytes resp = pkt::build_dns_response(*q, 3, {}, 0);
  auto a = parse_dns_answer(resp);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->rcode, 3);
  EXPECT_FALSE(a->address);
}

TEST(OfbenchDns, RejectsQueriesAndTruncatedAnswers) {
  EXPECT_FALSE(parse_dns_answer(dns_query(1, "a.b")));  // QR = 0
  auto q = pkt::parse_dns_query(dns_query(2, "h1.cpam.lan"));
  ASSERT_TRUE(q);
  const pkt::Ipv4Addr vip = pkt::ipv4(10, 0, 128, 1);
  Bytes resp = pkt::build_dns_response(*q, 0, std::span<const pkt::Ipv4Addr>(&vip, 1), 30);
  for (size_t cut = 0; cut < resp.size(); ++cut) {
    auto a = parse_dns_answer(std::span<const uint8_t>(resp.data(), cut));
    if (a) {
      EXPECT_FALSE(a->address) << "cut at " << cut;  // never an address from a cut record
    }
  }
}

TEST(OfbenchProcStat, ParsesCommWithSpacesAndParens) {
  const std::string line =
      "4242 (shard 0) x) S 1 4242 4242 0 -1 4194560 100 0 0 0 1234 567 0 0 20 0 3 0 100 1000000 400 "
      "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0";
  auto t = parse_stat_line(line);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->comm, "shard 0) x");
  EXPECT_EQ(t->utime_ticks, 1234u);
  EXPECT_EQ(t->stime_ticks, 567u);
  EXPECT_FALSE(parse_stat_line("4242 (cut"));
  EXPECT_FALSE(parse_stat_line("4242 (x) S 1 2"));
  EXPECT_FALSE(parse_stat_line("4242 (x) S 1 2 3 4 5 6 7 8 9 10 abc 11"));
}

TEST(OfbenchProcStat, ReadsOwnProcess) {
  auto s = read_proc(getpid());
  ASSERT_TRUE(s);
  EXPECT_GT(s->rss_kib, 0u);
  EXPECT_FALSE(s->threads.empty());
  EXPECT_FALSE(read_proc(0x7ffffff0));
}

TEST(OfbenchStats, NearestRankPercentiles) {
  std::vector<double> v;
  for (int i = 100; i >= 1; --i) v.push_back(i);
  auto j = stats_json(v);
  EXPECT_EQ(j["count"], 100);
  EXPECT_EQ(j["min"], 1.0);
  EXPECT_EQ(j["p50"], 50.0);
  EXPECT_EQ(j["p99"], 99.0);
  EXPECT_EQ(j["max"], 100.0);
  EXPECT_DOUBLE_EQ(j["mean"].get<double>(), 50.5);
  auto empty = stats_json({});
  EXPECT_EQ(empty["count"], 0);
  EXPECT_TRUE(empty["p99"].is_null());
}

// ---- switch-side roles (OpenFlow 1.3.5 6.3.6, 7.3.9) ------------------------------------------

constexpr uint32_t kNoChange = 0, kEqual = 1, kMaster = 2, kSlave = 3;

TEST(OfbenchRoles, ChannelsStartEqualAndGetAsync) {
  SwitchRoles r(3);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(r.role(i), CtlRole::kEqual);
    EXPECT_TRUE(r.gets_async(i));
    EXPECT_TRUE(r.may_modify(i));
  }
  EXPECT_FALSE(r.master());
  EXPECT_FALSE(r.generation_defined());
  // NOCHANGE only asks: the reply says EQUAL, and an undefined generation reads as all ones.
  auto a = r.request(1, kNoChange, 42);
  EXPECT_TRUE(a.ok);
  EXPECT_EQ(a.role, CtlRole::kEqual);
  EXPECT_EQ(a.generation, UINT64_MAX);
  EXPECT_FALSE(r.generation_defined());
}

TEST(OfbenchRoles, MasterDemotesThePreviousMaster) {
  SwitchRoles r(3);
  auto a = r.request(0, kMaster, 1);
  ASSERT_TRUE(a.ok);
  EXPECT_EQ(a.role, CtlRole::kMaster);
  EXPECT_EQ(a.generation, 1u);
  EXPECT_FALSE(a.demoted);
  ASSERT_TRUE(r.request(1, kSlave, 1).ok);
  EXPECT_FALSE(r.gets_async(1));   // a SLAVE gets no PacketIn
  EXPECT_FALSE(r.may_modify(1));   // and may not write (OFPBRC_IS_SLAVE)
  EXPECT_TRUE(r.gets_async(2));    // an EQUAL channel does both
  auto b = r.request(1, kMaster, 2);
  ASSERT_TRUE(b.ok);
  ASSERT_TRUE(b.demoted);
  EXPECT_EQ(*b.demoted, 0u);
  EXPECT_EQ(r.role(0), CtlRole::kSlave);
  EXPECT_EQ(r.role(1), CtlRole::kMaster);
  EXPECT_EQ(*r.master(), 1u);
  // NOCHANGE reports the current role and the switch's generation.
  auto c = r.request(0, kNoChange, 0);
  EXPECT_EQ(c.role, CtlRole::kSlave);
  EXPECT_EQ(c.generation, 2u);
}

TEST(OfbenchRoles, StaleGenerationRefusedAndChangesNothing) {
  SwitchRoles r(2);
  ASSERT_TRUE(r.request(0, kMaster, 10).ok);
  auto a = r.request(1, kMaster, 9);  // an older master wants the switch back
  EXPECT_FALSE(a.ok);
  EXPECT_EQ(a.error_code, role_err::kStale);
  EXPECT_EQ(r.role(0), CtlRole::kMaster);
  EXPECT_EQ(r.role(1), CtlRole::kEqual);
  EXPECT_EQ(r.generation(), 10u);
  EXPECT_FALSE(r.request(1, kSlave, 3).ok);  // SLAVE requests are fenced too
  EXPECT_TRUE(r.request(1, kMaster, 10).ok);  // the same generation is not stale
  EXPECT_TRUE(r.request(0, kEqual, 1).ok);    // EQUAL ignores the generation
  EXPECT_EQ(r.role(0), CtlRole::kEqual);
  EXPECT_EQ(r.generation(), 10u);
}

TEST(OfbenchRoles, GenerationDistanceWrapsAround) {
  SwitchRoles r(2);
  ASSERT_TRUE(r.request(0, kMaster, UINT64_MAX - 1).ok);
  // distance(1, 2^64 - 2) = 3 as a signed 64-bit difference: newer, not stale.
  EXPECT_TRUE(r.request(1, kMaster, 1).ok);
  EXPECT_FALSE(r.request(0, kMaster, UINT64_MAX).ok);  // distance -2: stale
}

TEST(OfbenchRoles, BadRoleAndReset) {
  SwitchRoles r(2);
  auto a = r.request(0, 4, 1);
  EXPECT_FALSE(a.ok);
  EXPECT_EQ(a.error_code, role_err::kBadRole);
  EXPECT_FALSE(r.generation_defined());
  ASSERT_TRUE(r.request(0, kMaster, 7).ok);
  r.reset(0);  // the master's connection closed: the next connection starts EQUAL
  EXPECT_EQ(r.role(0), CtlRole::kEqual);
  EXPECT_FALSE(r.master());
  EXPECT_TRUE(r.generation_defined());  // the switch keeps the largest generation
  EXPECT_FALSE(r.request(1, kMaster, 6).ok);
  EXPECT_TRUE(r.request(1, kMaster, 8).ok);
}

}  // namespace
}  // namespace sdn::ofbench
