// AfterImage, Kitsune's feature extractor: four families of damped statistics updated per
// packet, each stream's state for all λs kept in one flat slot of a capped StreamTable.
//
// Feature order (stable; K = lambdas.size(), λ in the configured order, L<λ> in names):
//   [0, 3K)      MI_dir_L<λ>_{weight,mean,std}       frame size per source MAC + IP
//   [3K, 10K)    HH_L<λ>_{weight,mean,std,magnitude,radius,covariance,pcc}
//                                                    frame size per channel src -> dst IP, 2D with
//                                                    the reverse channel dst -> src
//   [10K, 13K)   HH_jit_L<λ>_{weight,mean,std}       inter-arrival time per channel src -> dst IP
//   [13K, 20K)   HpHp_L<λ>_{...same 7 as HH}         frame size per socket src IP:port -> dst
//                                                    IP:port (with protocol), 2D with its reverse
// Within a family the λs are outermost, then the statistic (as the original Kitsune lists them).
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "apps/ids/kitnet/incstat.hpp"
#include "apps/ids/kitnet/kitsune.hpp"
#include "apps/ids/kitnet/stream_table.hpp"

namespace sdn::ids {

namespace {

// Endpoint encodings: a tag in the top byte keeps IPs, MACs and ARP sockets apart in one 64-bit
// space. Non-IP frames use their MACs in place of IPs (as Kitsune does); ARP uses the sender and
// target protocol addresses, so ARP joins the hosts' IP channels but has a socket of its own.
constexpr uint64_t kTagIp = uint64_t{1} << 56;
constexpr uint64_t kTagMac = uint64_t{2} << 56;
constexpr uint64_t kTagArp = uint64_t{3} << 56;
constexpr uint64_t kMacMask = (uint64_t{1} << 48) - 1;

uint64_t host_ep(const PacketInfo& p, bool src) {
  if (p.kind == PacketInfo::Kind::kOther) return kTagMac | ((src ? p.src_mac : p.dst_mac) & kMacMask);
  return kTagIp | (src ? p.src_ip : p.dst_ip);
}

uint64_t socket_ep(const PacketInfo& p, bool src) {
  switch (p.kind) {
    case PacketInfo::Kind::kIpv4: {
      // Only TCP and UDP have ports; anything else is keyed by protocol with port 0.
      const bool ports = p.proto == 6 || p.proto == 17;
      const uint64_t port = ports ? (src ? p.src_port : p.dst_port) : 0;
      return kTagIp | (uint64_t{p.proto} << 48) | (port << 32) | (src ? p.src_ip : p.dst_ip);
    }
    case PacketInfo::Kind::kArp:
      return kTagArp | (src ? p.src_ip : p.dst_ip);
    case PacketInfo::Kind::kOther:
      break;
  }
  return kTagMac | ((src ? p.src_mac : p.dst_mac) & kMacMask);
}

constexpr std::size_t k1dFields = 3;  // per λ: w, LS, SS
constexpr std::size_t k2dFields = 9;  // per λ: (w, LS, SS, last residual) x 2 sides, SR
constexpr std::size_t k1dOut = 3;
constexpr std::size_t k2dOut = 7;
constexpr std::array<const char*, 7> kStatNames = {"weight", "mean", "std", "magnitude", "radius", "covariance", "pcc"};

}  // namespace

struct FeatureExtractor::Impl {
  explicit Impl(ExtractorConfig c)
      : cfg(std::move(c)),
        k(cfg.lambdas.size()),
        gamma(k),
        mi(1 + k1dFields * k, cfg.max_streams),
        hh(1 + k2dFields * k, cfg.max_streams),
        jit(1 + k1dFields * k, cfg.max_streams),
        hphp(1 + k2dFields * k, cfg.max_streams) {}

  // Advances the slot's clock to t (a late packet counts as arriving at the slot's time) and
  // fills gamma[] with each λ's decay over the gap; returns the gap.
  double advance(double* s, double t) {
    const double dt = t - s[0];
    if (dt > 0) {
      s[0] = t;
      for (std::size_t i = 0; i < k; ++i) gamma[i] = std::exp2(-cfg.lambdas[i] * dt);
      return dt;
    }
    std::fill(gamma.begin(), gamma.end(), 1.0);
    return 0.0;
  }

  void update_1d(double* s, double x, double* out) {
    for (std::size_t i = 0; i < k; ++i) {
      double* q = s + 1 + k1dFields * i;
      const double g = gamma[i];
      q[0] = q[0] * g + 1;
      q[1] = q[1] * g + x;
      q[2] = q[2] * g + x * x;
      out[k1dOut * i] = q[0];
      out[k1dOut * i + 1] = stat_mean(q[0], q[1]);
      out[k1dOut * i + 2] = std::sqrt(stat_var(q[0], q[1], q[2]));
    }
  }

  void update_2d(double* s, int side, double x, double* out) {
    for (std::size_t i = 0; i < k; ++i) {
      double* q = s + 1 + k2dFields * i;
      double* own = q + 4 * side;
      double* oth = q + 4 * (1 - side);
      const double g = gamma[i];
      own[0] = own[0] * g + 1;
      own[1] = own[1] * g + x;
      own[2] = own[2] * g + x * x;
      oth[0] *= g;
      oth[1] *= g;
      oth[2] *= g;
      const double mu = own[1] / own[0];
      const double r = x - mu;
      q[8] = q[8] * g + r * oth[3];
      own[3] = r;
      const double var_s = stat_var(own[0], own[1], own[2]);
      const double var_o = stat_var(oth[0], oth[1], oth[2]);
      const double mu_o = stat_mean(oth[0], oth[1]);
      const double cov = q[8] / (own[0] + oth[0]);
      const double sd = std::sqrt(var_s * var_o);
      double* o = out + k2dOut * i;
      o[0] = own[0];
      o[1] = mu;
      o[2] = std::sqrt(var_s);
      o[3] = std::sqrt(mu * mu + mu_o * mu_o);
      o[4] = std::sqrt(var_s + var_o);
      o[5] = cov;
      o[6] = sd > 0 ? cov / sd : 0.0;
    }
  }

  void pair(StreamTable& table, uint64_t a, uint64_t b, double t, double x, double* out) {
    // One slot per unordered pair: both directions and SR_ij share it (and one clock, since
    // every update decays all of them to now).
    const int side = a <= b ? 0 : 1;
    const StreamKey key = side == 0 ? StreamKey{a, b} : StreamKey{b, a};
    bool created = false;
    double* s = table.find_or_insert(key, t, created);
    advance(s, t);
    update_2d(s, side, x, out);
  }

  void extract(const PacketInfo& p, double* out) {
    ++packets;
    const double t = p.ts;
    const double len = p.len;
    const uint64_t src = host_ep(p, true), dst = host_ep(p, false);
    bool created = false;

    double* s = mi.find_or_insert(StreamKey{p.src_mac & kMacMask, src}, t, created);
    advance(s, t);
    update_1d(s, len, out);
    out += k1dOut * k;

    pair(hh, src, dst, t, len, out);
    out += k2dOut * k;

    // Jitter: the value is the gap since the channel's previous packet (0 for its first one,
    // whose slot starts at t), which is also the gap the decay spans.
    s = jit.find_or_insert(StreamKey{src, dst}, t, created);
    const double gap = advance(s, t);
    update_1d(s, gap, out);
    out += k1dOut * k;

    pair(hphp, socket_ep(p, true), socket_ep(p, false), t, len, out);
  }

  ExtractorConfig cfg;
  std::size_t k;
  std::vector<double> gamma;
  StreamTable mi, hh, jit, hphp;
  uint64_t packets = 0;
};

FeatureExtractor::FeatureExtractor(ExtractorConfig cfg) : impl_(std::make_unique<Impl>(std::move(cfg))) {}
FeatureExtractor::~FeatureExtractor() = default;
FeatureExtractor::FeatureExtractor(FeatureExtractor&&) noexcept = default;
FeatureExtractor& FeatureExtractor::operator=(FeatureExtractor&&) noexcept = default;

std::size_t FeatureExtractor::dim() const { return 20 * impl_->k; }

void FeatureExtractor::extract(const PacketInfo& p, std::span<double> out) {
  if (out.size() != dim()) return;  // a caller bug; nothing sensible to write
  impl_->extract(p, out.data());
}

ExtractorStats FeatureExtractor::stats() const {
  const Impl& m = *impl_;
  ExtractorStats st;
  st.packets = m.packets;
  st.evicted = m.mi.evicted() + m.hh.evicted() + m.jit.evicted() + m.hphp.evicted();
  st.streams = m.mi.size() + m.hh.size() + m.jit.size() + m.hphp.size();
  return st;
}

std::string FeatureExtractor::feature_name(std::size_t i) const {
  const std::size_t k = impl_->k;
  if (i >= dim()) return {};
  struct Family {
    const char* name;
    std::size_t stats;
  };
  static constexpr std::array<Family, 4> kFamilies = {{{"MI_dir", k1dOut}, {"HH", k2dOut}, {"HH_jit", k1dOut}, {"HpHp", k2dOut}}};
  for (const Family& f : kFamilies) {
    const std::size_t n = f.stats * k;
    if (i < n) return fmt::format("{}_L{:g}_{}", f.name, impl_->cfg.lambdas[i / f.stats], kStatNames[i % f.stats]);
    i -= n;
  }
  return {};
}

}  // namespace sdn::ids
