// Batch encoding and the frame -> PacketInfo step (pkt's parsers do the header work).
#include "apps/ids/traffic.hpp"

#include <cstring>

#include "pkt/parse.hpp"

namespace sdn::apps::ids {
namespace detail {
uint64_t read_le(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
}  // namespace detail

namespace {
void put_le(std::string& out, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
}  // namespace

BatchWriter::BatchWriter() { buf_.assign(kBatchMagic.data(), kBatchMagic.size()), put_le(buf_, 0, 4); }

void BatchWriter::add(int64_t ts_ns, uint32_t wire_len, uint16_t source, std::span<const uint8_t> captured) {
  const std::size_t cap = std::min<std::size_t>(captured.size(), 0xffff);
  put_le(buf_, static_cast<uint64_t>(ts_ns), 8);
  put_le(buf_, std::max<uint32_t>(wire_len, static_cast<uint32_t>(cap)), 4);
  put_le(buf_, cap, 2);
  put_le(buf_, source, 2);
  buf_.append(reinterpret_cast<const char*>(captured.data()), cap);
  ++count_;
}

std::string BatchWriter::take() {
  for (int i = 0; i < 4; ++i) buf_[4 + i] = static_cast<char>((count_ >> (8 * i)) & 0xff);
  std::string out = std::move(buf_);
  buf_.clear();
  buf_.assign(kBatchMagic.data(), kBatchMagic.size());
  put_le(buf_, 0, 4);
  count_ = 0;
  return out;
}

std::optional<PacketInfo> packet_info(const Frame& f, double ts_origin_s) {
  pkt::ByteView view(f.bytes.data(), f.bytes.size());
  auto parsed = pkt::parse(view, pkt::ParseOptions{.allow_truncated = true});
  if (!parsed) return std::nullopt;
  PacketInfo p;
  p.ts = static_cast<double>(f.ts_ns) * 1e-9 - ts_origin_s;
  p.len = f.wire_len;
  p.src_mac = parsed->eth.src.value;
  p.dst_mac = parsed->eth.dst.value;
  if (parsed->ipv4) {
    p.kind = PacketInfo::Kind::kIpv4;
    p.src_ip = parsed->ipv4->src.value;
    p.dst_ip = parsed->ipv4->dst.value;
    p.proto = parsed->ipv4->protocol;
    if (auto sp = parsed->l4_src_port()) p.src_port = *sp;
    if (auto dp = parsed->l4_dst_port()) p.dst_port = *dp;
    if (parsed->tcp) p.tcp_flags = parsed->tcp->flags;
  } else if (parsed->arp) {
    p.kind = PacketInfo::Kind::kArp;
    p.src_ip = parsed->arp->spa.value;
    p.dst_ip = parsed->arp->tpa.value;
  } else {
    p.kind = PacketInfo::Kind::kOther;
  }
  return p;
}

}  // namespace sdn::apps::ids
