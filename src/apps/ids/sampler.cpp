// The sampler's capture loop: poll(2) over the AF_PACKET sockets, recvmmsg(2) in bursts with
// kernel timestamps (SO_TIMESTAMPNS) and the real frame length (MSG_TRUNC), one batch per
// production interval.
#include "apps/ids/sampler.hpp"

#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "apps/ids/traffic.hpp"
#include "core/log.hpp"

namespace sdn::apps::ids {
namespace {
using Clock = std::chrono::steady_clock;
constexpr int kBurst = 64;
}  // namespace

Sampler::Sampler(SamplerConfig cfg, std::shared_ptr<data::Due> due) : cfg_(std::move(cfg)), due_(std::move(due)) {}

Sampler::~Sampler() { stop(); }

void Sampler::start() {
  if (thread_.joinable() || !due_) return;
  stop_ = false;
  thread_ = std::thread([this] { run(); });
}

void Sampler::stop() {
  stop_ = true;
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::vector<std::string> Sampler::resolve(const std::vector<std::string>& patterns) {
  std::vector<std::string> out;
  std::vector<std::string> present;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/sys/class/net", ec)) present.push_back(e.path().filename());
  for (const auto& p : patterns) {
    if (!p.empty() && p.back() == '*') {
      const std::string prefix = p.substr(0, p.size() - 1);
      for (const auto& n : present)
        if (n.rfind(prefix, 0) == 0) out.push_back(n);
    } else if (std::find(present.begin(), present.end(), p) != present.end()) {
      out.push_back(p);
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

bool Sampler::open_sockets() {
  const auto names = resolve(cfg_.interfaces);
  if (names.empty()) {
    c_.open_errors.fetch_add(1);
    SDN_LOG_RATELIMITED(spdlog::level::warn, "sampler: no capture interface matches [sampler] interfaces = [{}]",
                        fmt::join(cfg_.interfaces, ", "));
    return false;
  }
  for (const auto& name : names) {
    const unsigned idx = if_nametoindex(name.c_str());
    int fd = ::socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, htons(ETH_P_ALL));
    if (idx == 0 || fd < 0) {
      c_.open_errors.fetch_add(1);
      SDN_LOG_RATELIMITED(spdlog::level::warn, "sampler: cannot open {}: {}", name, std::strerror(errno));
      if (fd >= 0) ::close(fd);
      continue;
    }
    sockaddr_ll sll{};
    sll.sll_family = AF_PACKET;
    sll.sll_protocol = htons(ETH_P_ALL);
    sll.sll_ifindex = static_cast<int>(idx);
    const int on = 1;
    const int rcvbuf = 8 << 20;
    ::setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on);
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof rcvbuf);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&sll), sizeof sll) != 0) {
      c_.open_errors.fetch_add(1);
      SDN_LOG_RATELIMITED(spdlog::level::warn, "sampler: cannot bind to {}: {}", name, std::strerror(errno));
      ::close(fd);
      continue;
    }
    socks_.push_back(Socket{fd, name, static_cast<uint16_t>(socks_.size())});
  }
  if (socks_.empty()) return false;
  c_.captures_started.fetch_add(1);
  capturing_ = true;
  std::vector<std::string> open;
  for (const auto& s : socks_) open.push_back(s.name);
  spdlog::info("sampler: a consumer wants {}: capturing on {}", cfg_.key, fmt::join(open, ", "));
  return true;
}

void Sampler::close_sockets() {
  for (auto& s : socks_) {
    tpacket_stats st{};
    socklen_t len = sizeof st;
    if (::getsockopt(s.fd, SOL_PACKET, PACKET_STATISTICS, &st, &len) == 0) c_.kernel_drops.fetch_add(st.tp_drops);
    ::close(s.fd);
  }
  if (!socks_.empty()) {
    c_.captures_stopped.fetch_add(1);
    spdlog::info("sampler: no consumer wants {} any more: capture stopped", cfg_.key);
  }
  socks_.clear();
  pending_.clear();
  arena_.clear();
  capturing_ = false;
}

void Sampler::read_socket(const Socket& s) {
  std::array<mmsghdr, kBurst> msgs{};
  std::array<iovec, kBurst> iov{};
  std::array<sockaddr_ll, kBurst> from{};
  std::array<std::array<char, CMSG_SPACE(sizeof(timespec))>, kBurst> ctrl{};
  std::vector<uint8_t> buf(static_cast<std::size_t>(kBurst) * cfg_.snaplen);
  for (int round = 0; round < 64; ++round) {  // at most 4096 frames a turn per socket
    for (int i = 0; i < kBurst; ++i) {
      iov[i] = {buf.data() + static_cast<std::size_t>(i) * cfg_.snaplen, cfg_.snaplen};
      msgs[i].msg_hdr = msghdr{};
      msgs[i].msg_hdr.msg_iov = &iov[i];
      msgs[i].msg_hdr.msg_iovlen = 1;
      msgs[i].msg_hdr.msg_name = &from[i];
      msgs[i].msg_hdr.msg_namelen = sizeof(sockaddr_ll);
      msgs[i].msg_hdr.msg_control = ctrl[i].data();
      msgs[i].msg_hdr.msg_controllen = ctrl[i].size();
    }
    const int n = ::recvmmsg(s.fd, msgs.data(), kBurst, MSG_DONTWAIT | MSG_TRUNC, nullptr);
    if (n <= 0) return;
    for (int i = 0; i < n; ++i) {
      if (from[i].sll_pkttype == PACKET_OUTGOING) continue;  // the capture interface's own sends
      int64_t ts = data::wall_ns();
      for (cmsghdr* cm = CMSG_FIRSTHDR(&msgs[i].msg_hdr); cm; cm = CMSG_NXTHDR(&msgs[i].msg_hdr, cm)) {
        if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_TIMESTAMPNS) {
          timespec tsp{};
          std::memcpy(&tsp, CMSG_DATA(cm), sizeof tsp);
          ts = static_cast<int64_t>(tsp.tv_sec) * 1'000'000'000 + tsp.tv_nsec;
        }
      }
      const uint32_t wire = msgs[i].msg_len;
      const uint32_t cap = std::min<uint32_t>(wire, cfg_.snaplen);
      if (pending_.size() >= cfg_.max_batch) {
        c_.batch_full.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      const auto off = static_cast<uint32_t>(arena_.size());
      const uint8_t* p = buf.data() + static_cast<std::size_t>(i) * cfg_.snaplen;
      arena_.insert(arena_.end(), p, p + cap);
      pending_.push_back(Pending{ts, wire, s.source, off, cap});
      c_.packets.fetch_add(1, std::memory_order_relaxed);
      c_.bytes.fetch_add(wire, std::memory_order_relaxed);
    }
    if (n < kBurst) return;
  }
}

void Sampler::publish() {
  if (pending_.empty()) return;
  std::stable_sort(pending_.begin(), pending_.end(), [](const Pending& a, const Pending& b) { return a.ts_ns < b.ts_ns; });
  BatchWriter w;
  for (const auto& f : pending_)
    w.add(f.ts_ns, f.wire_len, f.source, std::span<const uint8_t>(arena_.data() + f.offset, f.len));
  pending_.clear();
  arena_.clear();
  const unsigned flags = data::kNoWait | (cfg_.archive ? 0u : static_cast<unsigned>(data::kPubOnly));
  if (auto r = due_->write(cfg_.key, data::Value(data::Bytes{w.take()}), flags); !r) {
    c_.write_errors.fetch_add(1);
    SDN_LOG_RATELIMITED(spdlog::level::warn, "sampler: cannot write {}: {}", cfg_.key, r.error());
    return;
  }
  c_.batches.fetch_add(1, std::memory_order_relaxed);
}

void Sampler::run() {
  auto next_open_try = Clock::now();
  auto last_flush = Clock::now();
  std::vector<pollfd> fds;
  while (!stop_) {
    const bool want = due_->wanted(cfg_.key);
    const auto now = Clock::now();
    if (want && socks_.empty() && now >= next_open_try) {
      if (!open_sockets()) next_open_try = now + std::chrono::seconds(1);
      last_flush = now;
    } else if (!want && !socks_.empty()) {
      publish();
      close_sockets();
    }
    if (socks_.empty()) {
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, std::chrono::milliseconds(20), [this] { return stop_.load(); });
      continue;
    }
    const double freq = std::min(cfg_.max_freq, due_->assigned_freq(cfg_.key).value_or(cfg_.default_freq));
    const auto interval = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(1.0 / freq));
    const auto due_at = last_flush + interval;
    const auto wait = std::clamp<int64_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(due_at - Clock::now()).count(), 0, 20);
    fds.clear();
    for (const auto& s : socks_) fds.push_back(pollfd{s.fd, POLLIN, 0});
    if (::poll(fds.data(), fds.size(), static_cast<int>(wait)) > 0) {
      for (std::size_t i = 0; i < fds.size(); ++i) {
        if (fds[i].revents & POLLIN) read_socket(socks_[i]);
        if (fds[i].revents & (POLLERR | POLLNVAL)) {
          // The interface went away (e.g. the testbed was torn down): reopen later.
          SDN_LOG_RATELIMITED(spdlog::level::warn, "sampler: capture on {} failed; reopening", socks_[i].name);
          c_.open_errors.fetch_add(1);
          publish();
          close_sockets();
          next_open_try = Clock::now() + std::chrono::seconds(1);
          break;
        }
      }
    }
    if (!socks_.empty() && Clock::now() >= due_at) {
      publish();
      last_flush = Clock::now();
    }
  }
  publish();
  close_sockets();
}

nlohmann::json Sampler::stats_json() const {
  return {{"packets", c_.packets.load()},
          {"bytes", c_.bytes.load()},
          {"batches", c_.batches.load()},
          {"batch_full", c_.batch_full.load()},
          {"kernel_drops", c_.kernel_drops.load()},
          {"captures_started", c_.captures_started.load()},
          {"captures_stopped", c_.captures_stopped.load()},
          {"open_errors", c_.open_errors.load()},
          {"write_errors", c_.write_errors.load()},
          {"capturing", capturing_.load() ? 1 : 0}};
}

}  // namespace sdn::apps::ids
