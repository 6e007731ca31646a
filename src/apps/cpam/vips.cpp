// VIP table (one atomic word per VIP) and the lifecycle driver.
#include "apps/cpam/vips.hpp"

#include <sys/random.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cstdlib>

namespace sdn::apps::cpam {
namespace {
int64_t ns_of(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}
}  // namespace

const char* state_name(VipState s) {
  switch (s) {
    case VipState::kFree: return "free";
    case VipState::kReserved: return "reserved";
    case VipState::kPrimary: return "primary";
    case VipState::kGrace: return "grace";
    case VipState::kQuarantine: return "quarantine";
  }
  return "?";
}

VipTable::VipTable(uint32_t size) : words_(size), grace_since_(size) {
  for (auto& w : words_) w.store(pack(VipState::kFree, kNone, 0, 0), std::memory_order_relaxed);
}

uint64_t VipTable::pack(VipState s, uint32_t owner, uint64_t sess, uint64_t flows) {
  const uint64_t o = owner == kNone ? kOwnerMask : (owner & kOwnerMask);
  return (uint64_t{static_cast<uint8_t>(s)} << kStateShift) | (o << kOwnerShift) | ((sess & kRefMask) << kSessShift) |
         (flows & kRefMask);
}

VipTable::View VipTable::unpack(uint64_t w) {
  View v;
  v.state = static_cast<VipState>(w >> kStateShift);
  const uint64_t o = (w >> kOwnerShift) & kOwnerMask;
  v.owner = o == kOwnerMask ? kNone : static_cast<uint32_t>(o);
  v.sessions = static_cast<uint32_t>((w >> kSessShift) & kRefMask);
  v.flows = static_cast<uint32_t>(w & kRefMask);
  return v;
}

VipTable::View VipTable::load(uint32_t vip) const {
  if (vip >= words_.size()) return {};
  return unpack(words_[vip].load(std::memory_order_acquire));
}

std::optional<uint32_t> VipTable::acquire_session(uint32_t vip, Clock::time_point now, Clock::duration accept) {
  if (vip >= words_.size()) return std::nullopt;
  uint64_t w = words_[vip].load(std::memory_order_acquire);
  while (true) {
    const View v = unpack(w);
    if (v.owner == kNone || v.sessions == kRefMask) return std::nullopt;
    if (v.state == VipState::kGrace) {
      const int64_t since = grace_since_[vip].load(std::memory_order_acquire);
      if (ns_of(now) - since >= std::chrono::duration_cast<std::chrono::nanoseconds>(accept).count())
        return std::nullopt;
    } else if (v.state != VipState::kPrimary) {
      return std::nullopt;
    }
    if (words_[vip].compare_exchange_weak(w, w + (uint64_t{1} << kSessShift), std::memory_order_acq_rel))
      return v.owner;
  }
}

void VipTable::release_session(uint32_t vip) {
  if (vip >= words_.size()) return;
  [[maybe_unused]] const uint64_t before = words_[vip].fetch_sub(uint64_t{1} << kSessShift, std::memory_order_acq_rel);
  assert(unpack(before).sessions > 0);
}

void VipTable::add_flow(uint32_t vip) {
  if (vip < words_.size() && unpack(words_[vip].load(std::memory_order_relaxed)).flows < kRefMask)
    words_[vip].fetch_add(1, std::memory_order_acq_rel);
}

void VipTable::drop_flow(uint32_t vip) {
  if (vip >= words_.size()) return;
  uint64_t w = words_[vip].load(std::memory_order_acquire);
  while ((w & kRefMask) != 0 && !words_[vip].compare_exchange_weak(w, w - 1, std::memory_order_acq_rel)) {
  }
}

Clock::time_point VipTable::grace_since(uint32_t vip) const {
  return Clock::time_point(std::chrono::nanoseconds(grace_since_[vip].load(std::memory_order_acquire)));
}

bool VipTable::reserve(uint32_t vip, uint32_t owner) {
  uint64_t expect = pack(VipState::kFree, kNone, 0, 0);
  if (!words_[vip].compare_exchange_strong(expect, pack(VipState::kReserved, owner, 0, 0), std::memory_order_acq_rel))
    return false;
  live_changed();
  return true;
}

// State changes that keep the references: a CAS loop over the state bits only.
namespace {
template <class F>
void change_state(std::atomic<uint64_t>& word, F next) {
  uint64_t w = word.load(std::memory_order_acquire);
  while (!word.compare_exchange_weak(w, next(w), std::memory_order_acq_rel)) {
  }
}
constexpr uint64_t kStateBits = uint64_t{7} << 61;
}  // namespace

void VipTable::promote(uint32_t vip) {
  change_state(words_[vip], [](uint64_t w) {
    return (w & ~kStateBits) | (uint64_t{static_cast<uint8_t>(VipState::kPrimary)} << kStateShift);
  });
}

void VipTable::retire(uint32_t vip, Clock::time_point now) {
  grace_since_[vip].store(ns_of(now), std::memory_order_release);  // before the state: readers check it after
  change_state(words_[vip], [](uint64_t w) {
    return (w & ~kStateBits) | (uint64_t{static_cast<uint8_t>(VipState::kGrace)} << kStateShift);
  });
}

bool VipTable::try_quarantine(uint32_t vip) {
  uint64_t w = words_[vip].load(std::memory_order_acquire);
  const View v = unpack(w);
  if (v.state != VipState::kGrace || v.sessions != 0 || v.flows != 0) return false;
  if (!words_[vip].compare_exchange_strong(w, pack(VipState::kQuarantine, v.owner, 0, 0), std::memory_order_acq_rel))
    return false;
  live_changed();
  return true;
}

void VipTable::free(uint32_t vip) {
  words_[vip].store(pack(VipState::kFree, kNone, 0, 0), std::memory_order_release);
  live_changed();
}

void VipTable::restore(uint32_t vip, VipState s, uint32_t owner, Clock::time_point grace_since) {
  if (vip >= words_.size()) return;
  grace_since_[vip].store(ns_of(grace_since), std::memory_order_release);
  change_state(words_[vip], [&](uint64_t w) {
    const View v = unpack(w);
    return pack(s, owner, v.sessions, v.flows);
  });
  live_changed();
}

void VipTable::add_session(uint32_t vip) {
  if (vip < words_.size() && unpack(words_[vip].load(std::memory_order_relaxed)).sessions < kRefMask)
    words_[vip].fetch_add(uint64_t{1} << kSessShift, std::memory_order_acq_rel);
}

HostDirectory::HostDirectory(std::vector<ProtectedHost> h) : hosts(std::move(h)) {
  for (uint32_t i = 0; i < hosts.size(); ++i) {
    by_name.emplace(hosts[i].name, i);
    by_ip.emplace(hosts[i].ip, i);
  }
}

std::optional<uint32_t> HostDirectory::find_ip(uint32_t ip) const {
  auto it = by_ip.find(ip);
  if (it == by_ip.end()) return std::nullopt;
  return it->second;
}

VipLifecycle::VipLifecycle(const CpamConfig& cfg, std::shared_ptr<VipTable> table, size_t hosts)
    : cfg_(cfg), table_(std::move(table)), hosts_(hosts), primary_(hosts, kNone), next_(hosts, kNone) {
  free_.reserve(table_->size());
  for (uint32_t v = 0; v < table_->size(); ++v) free_.push_back(v);
  auto s = std::make_shared<Snapshot>();
  s->primary = primary_;
  current_ = std::move(s);
}

uint32_t VipLifecycle::uniform(uint32_t n) {
  assert(n > 0);
  const uint32_t limit = UINT32_MAX - UINT32_MAX % n;  // values >= limit would bias the modulo
  while (true) {
    uint32_t r = 0;
    const ssize_t got = getrandom(&r, sizeof r, 0);
    if (got != static_cast<ssize_t>(sizeof r)) {
      if (got < 0 && errno == EINTR) continue;
      std::abort();  // no kernel randomness: a predictable VIP would defeat the defense
    }
    if (r < limit) return r % n;
  }
}

uint32_t VipLifecycle::alloc() {
  if (free_.empty()) return kNone;
  const uint32_t i = uniform(static_cast<uint32_t>(free_.size()));
  const uint32_t v = free_[i];
  free_[i] = free_.back();
  free_.pop_back();
  return v;
}

std::vector<std::pair<uint32_t, uint32_t>> VipLifecycle::reserve_next(Clock::time_point now) {
  record_ = RotationRecord{};
  record_.epoch = epoch_ + 1;
  record_.started = now;
  record_.hosts = hosts_;
  std::vector<std::pair<uint32_t, uint32_t>> out;
  out.reserve(hosts_);
  for (uint32_t h = 0; h < hosts_; ++h) {
    if (next_[h] != kNone) {  // a rotation that never committed: reuse its reservation
      out.emplace_back(h, next_[h]);
      continue;
    }
    const uint32_t v = alloc();
    if (v == kNone) {
      ++record_.pool_exhausted;
      continue;
    }
    [[maybe_unused]] const bool ok = table_->reserve(v, h);
    assert(ok);
    next_[h] = v;
    out.emplace_back(h, v);
  }
  return out;
}

std::shared_ptr<const Snapshot> VipLifecycle::commit(Clock::time_point now, Clock::time_point next_rotation) {
  for (uint32_t h = 0; h < hosts_; ++h) {
    if (next_[h] == kNone) continue;
    table_->promote(next_[h]);
    if (primary_[h] != kNone) {
      table_->retire(primary_[h], now);
      grace_.push_back({primary_[h], now, Clock::time_point::max()});
    }
    primary_[h] = next_[h];
    next_[h] = kNone;
    ++record_.rotated;
  }
  auto s = std::make_shared<Snapshot>();
  s->epoch = ++epoch_;
  s->published = now;
  s->next_rotation = next_rotation;
  s->primary = primary_;
  current_ = s;
  record_.epoch = epoch_;
  record_.published = now;
  record_.grace = grace_.size();
  record_.free_after = free_.size();
  return s;
}

VipLifecycle::Reclaimed VipLifecycle::reclaim(
    Clock::time_point now, const std::function<bool(uint32_t vip, Clock::time_point since)>& held) {
  Reclaimed out;
  for (size_t i = 0; i < grace_.size();) {
    Retired& r = grace_[i];
    const auto v = table_->load(r.vip);
    if (v.sessions != 0 || v.flows != 0 || (held && held(r.vip, r.since))) {
      r.zero_since = Clock::time_point::max();
      ++i;
      continue;
    }
    if (r.zero_since == Clock::time_point::max()) r.zero_since = now;
    // Unreferenced for the threshold, and past the window in which new sessions may still bind.
    const bool due = now - r.zero_since >= cfg_.reclaim_threshold && now - r.since >= cfg_.grace_accept;
    if (due && table_->try_quarantine(r.vip)) {
      out.quarantined.emplace_back(r.vip, v.owner);
      quarantine_.emplace_back(r.vip, now);
      grace_[i] = grace_.back();
      grace_.pop_back();
      continue;
    }
    ++i;
  }
  for (size_t i = 0; i < quarantine_.size();) {
    if (now - quarantine_[i].second >= cfg_.quarantine) {
      table_->free(quarantine_[i].first);
      free_.push_back(quarantine_[i].first);
      ++out.freed;
      quarantine_[i] = quarantine_.back();
      quarantine_.pop_back();
      continue;
    }
    ++i;
  }
  record_.quarantined += out.quarantined.size();
  record_.freed += out.freed;
  return out;
}

PersistedVips VipLifecycle::export_state(Clock::time_point now, int64_t unix_now_ms) const {
  auto to_unix = [&](Clock::time_point t) {
    return unix_now_ms - std::chrono::duration_cast<std::chrono::milliseconds>(now - t).count();
  };
  PersistedVips p;
  p.epoch = epoch_;
  p.time_ms = unix_now_ms;
  p.primary = primary_;
  p.next = next_;
  if (current_) p.next_rotation_ms = to_unix(current_->next_rotation);
  for (const auto& r : grace_) p.retired.push_back({r.vip, VipState::kGrace, table_->load(r.vip).owner, to_unix(r.since)});
  for (const auto& [vip, since] : quarantine_)
    p.retired.push_back({vip, VipState::kQuarantine, table_->load(vip).owner, to_unix(since)});
  return p;
}

size_t VipLifecycle::restore(const PersistedVips& p, Clock::time_point now, int64_t unix_now_ms,
                             Clock::time_point next_rotation) {
  auto to_steady = [&](int64_t ms) {
    const int64_t ago = std::max<int64_t>(0, unix_now_ms - ms);
    return now - std::chrono::milliseconds(ago);
  };
  const uint32_t pool = table_->size();
  std::vector<bool> used(pool, false);
  size_t skipped = 0;
  auto take = [&](uint32_t vip) {
    if (vip >= pool || used[vip]) {
      ++skipped;
      return false;
    }
    used[vip] = true;
    return true;
  };
  for (uint32_t h = 0; h < hosts_; ++h) {
    const uint32_t pv = h < p.primary.size() ? p.primary[h] : kNone;
    const uint32_t nv = h < p.next.size() ? p.next[h] : kNone;
    if (pv != kNone && take(pv)) {
      table_->restore(pv, VipState::kPrimary, h, now);
      primary_[h] = pv;
    }
    if (nv != kNone && take(nv)) {
      table_->restore(nv, VipState::kReserved, h, now);
      next_[h] = nv;
    }
  }
  for (const auto& r : p.retired) {
    if (!take(r.vip)) continue;
    const uint32_t owner = r.owner < hosts_ ? r.owner : kNone;
    const auto since = to_steady(r.since_ms);
    if (r.state == VipState::kGrace && owner != kNone) {
      table_->restore(r.vip, VipState::kGrace, owner, since);
      grace_.push_back({r.vip, since, Clock::time_point::max()});
    } else {  // quarantined, or a Grace VIP whose owner is gone: never handed out before its time
      table_->restore(r.vip, VipState::kQuarantine, owner, since);
      quarantine_.emplace_back(r.vip, r.state == VipState::kQuarantine ? since : now);
    }
  }
  free_.clear();
  for (uint32_t v = 0; v < pool; ++v)
    if (!used[v]) {
      if (table_->load(v).state != VipState::kFree) table_->restore(v, VipState::kFree, kNone, now);
      free_.push_back(v);
    }
  epoch_ = p.epoch;
  auto s = std::make_shared<Snapshot>();
  s->epoch = epoch_;
  s->published = now;
  s->next_rotation = next_rotation;
  s->primary = primary_;
  current_ = std::move(s);
  record_ = RotationRecord{};
  record_.epoch = epoch_;
  record_.hosts = hosts_;
  record_.started = record_.published = now;
  record_.grace = grace_.size();
  record_.free_after = free_.size();
  return skipped;
}

bool VipLifecycle::claim(uint32_t vip, uint32_t owner, Clock::time_point now) {
  auto it = std::find(free_.begin(), free_.end(), vip);
  if (it == free_.end() || table_->load(vip).state != VipState::kFree) return false;
  *it = free_.back();
  free_.pop_back();
  const auto since = now - cfg_.grace_accept;  // no new session binds it
  table_->restore(vip, VipState::kGrace, owner, since);
  grace_.push_back({vip, since, Clock::time_point::max()});
  return true;
}

}  // namespace sdn::apps::cpam
