// Encode/decode rates of the OpenFlow 1.3 codec on the hot-path messages: PACKET_IN (64- and
// 1500-byte frames), a typical FLOW_MOD, PACKET_OUT, a 100-entry flow-stats reply, and the
// 8-byte header peek the framer does per message. Reports items/s and bytes/s.
#include <benchmark/benchmark.h>

#include <cstdlib>

#include "ofp/message.hpp"

namespace {

using namespace sdn::ofp;  // NOLINT: benchmark-local brevity

Bytes frame(size_t n) {
  Bytes f(n);
  for (size_t i = 0; i < n; ++i) f[i] = static_cast<uint8_t>(i * 31 + 7);
  return f;
}

Message packet_in(const Bytes& f) {
  PacketIn p;
  p.total_len = static_cast<uint16_t>(f.size());
  p.reason = 0;
  p.match.set(OxmField::kInPort, 3);
  p.data = f;
  return {1, p};
}

Message flow_mod() {
  // The reactive-forwarding shape: 5-field exact match, apply-actions(output).
  FlowMod f;
  f.priority = 100;
  f.idle_timeout = 10;
  f.flags = kFlowFlagSendFlowRem;
  f.match.set(OxmField::kInPort, 1)
      .set(OxmField::kEthType, 0x0800)
      .set(OxmField::kIpProto, 6)
      .set(OxmField::kIpv4Dst, 0x0a000001)
      .set(OxmField::kTcpDst, 80);
  f.instructions.push_back(InstrApplyActions{{ActionOutput{2, 0}}});
  return {2, f};
}

Message packet_out(const Bytes& f) {
  PacketOut p;
  p.in_port = 1;
  p.actions.push_back(ActionOutput{2, 0});
  p.data = f;
  return {3, p};
}

Message flow_stats_reply(size_t n) {
  MultipartReply r;
  r.type = MultipartType::kFlow;
  std::vector<FlowStats> v(n);
  for (size_t i = 0; i < n; ++i) {
    v[i].priority = 100;
    v[i].cookie = i;
    v[i].packet_count = i * 10;
    v[i].byte_count = i * 1000;
    v[i].match.set(OxmField::kInPort, 1).set(OxmField::kEthType, 0x0800).set(OxmField::kIpv4Dst, 0x0a000000 + i);
    v[i].instructions.push_back(InstrApplyActions{{ActionOutput{2, 0}}});
  }
  r.body = std::move(v);
  return {4, r};
}

Bytes encoded(const Message& m) {
  Bytes out;
  if (!encode(m, out)) std::abort();
  return out;
}

void run_encode(benchmark::State& state, const Message& m) {
  Bytes out;
  out.reserve(1 << 16);
  size_t bytes = 0;
  for (auto _ : state) {
    out.clear();
    auto r = encode(m, out);
    benchmark::DoNotOptimize(r);
    benchmark::DoNotOptimize(out.data());
    bytes += out.size();
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
}

void run_decode(benchmark::State& state, const Message& m) {
  const Bytes wire = encoded(m);
  for (auto _ : state) {
    auto d = decode(wire);
    if (!d) state.SkipWithError("decode failed");
    benchmark::DoNotOptimize(d);
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * wire.size()));
}

const Bytes kFrame64 = frame(64);
const Bytes kFrame1500 = frame(1500);

void BM_EncodePacketIn64(benchmark::State& s) { run_encode(s, packet_in(kFrame64)); }
void BM_DecodePacketIn64(benchmark::State& s) { run_decode(s, packet_in(kFrame64)); }
void BM_EncodePacketIn1500(benchmark::State& s) { run_encode(s, packet_in(kFrame1500)); }
void BM_DecodePacketIn1500(benchmark::State& s) { run_decode(s, packet_in(kFrame1500)); }
void BM_EncodeFlowMod(benchmark::State& s) { run_encode(s, flow_mod()); }
void BM_DecodeFlowMod(benchmark::State& s) { run_decode(s, flow_mod()); }
void BM_EncodePacketOut64(benchmark::State& s) { run_encode(s, packet_out(kFrame64)); }
void BM_DecodePacketOut64(benchmark::State& s) { run_decode(s, packet_out(kFrame64)); }
void BM_EncodeFlowStatsReply100(benchmark::State& s) { run_encode(s, flow_stats_reply(100)); }
void BM_DecodeFlowStatsReply100(benchmark::State& s) { run_decode(s, flow_stats_reply(100)); }

void BM_PeekHeader(benchmark::State& state) {
  const Bytes wire = encoded(packet_in(kFrame64));
  for (auto _ : state) {
    auto h = decode_header(wire);
    benchmark::DoNotOptimize(h);
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kHeaderLen));
}

BENCHMARK(BM_EncodePacketIn64);
BENCHMARK(BM_DecodePacketIn64);
BENCHMARK(BM_EncodePacketIn1500);
BENCHMARK(BM_DecodePacketIn1500);
BENCHMARK(BM_EncodeFlowMod);
BENCHMARK(BM_DecodeFlowMod);
BENCHMARK(BM_EncodePacketOut64);
BENCHMARK(BM_DecodePacketOut64);
BENCHMARK(BM_EncodeFlowStatsReply100);
BENCHMARK(BM_DecodeFlowStatsReply100);
BENCHMARK(BM_PeekHeader);

}  // namespace

BENCHMARK_MAIN();
