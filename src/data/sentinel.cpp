// Sentinel lookup and the master connection helper (sentinel.hpp).
#include "data/sentinel.hpp"

#include <hiredis/hiredis.h>

#include <charconv>
#include <memory>

#include <fmt/format.h>

namespace sdn::data {
namespace {

struct CtxFree {
  void operator()(redisContext* c) const {
    if (c != nullptr) redisFree(c);
  }
};
using Ctx = std::unique_ptr<redisContext, CtxFree>;

struct ReplyFree {
  void operator()(redisReply* r) const {
    if (r != nullptr) freeReplyObject(r);
  }
};
using Reply = std::unique_ptr<redisReply, ReplyFree>;

timeval to_tv(std::chrono::milliseconds ms) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(ms.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((ms.count() % 1000) * 1000);
  return tv;
}

Reply command(redisContext* c, const std::vector<std::string>& args) {
  std::vector<const char*> a;
  std::vector<std::size_t> l;
  for (const auto& s : args) {
    a.push_back(s.c_str());
    l.push_back(s.size());
  }
  return Reply(static_cast<redisReply*>(
      redisCommandArgv(c, static_cast<int>(a.size()), a.data(), l.data())));
}

Ctx connect(const HostPort& hp, std::chrono::milliseconds timeout, std::string& err) {
  const timeval tv = to_tv(timeout);
  Ctx c(redisConnectWithTimeout(hp.host.c_str(), hp.port, tv));
  if (!c) {
    err = "cannot allocate a hiredis context";
    return nullptr;
  }
  if (c->err != 0) {
    err = fmt::format("connect {}: {}", hp.str(), c->errstr);
    return nullptr;
  }
  if (redisSetTimeout(c.get(), tv) != REDIS_OK) {
    err = fmt::format("setting socket timeouts on {}: {}", hp.str(), c->errstr);
    return nullptr;
  }
  return c;
}

}  // namespace

Expected<HostPort, std::string> parse_host_port(std::string_view text) {
  const auto colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0)
    return unexpected(fmt::format("'{}' is not host:port", text));
  const std::string_view p = text.substr(colon + 1);
  unsigned port = 0;
  const auto res = std::from_chars(p.data(), p.data() + p.size(), port);
  if (p.empty() || res.ec != std::errc() || res.ptr != p.data() + p.size() || port == 0 ||
      port > 65535)
    return unexpected(fmt::format("'{}': bad port", text));
  std::string host(text.substr(0, colon));
  // [::1]:6379 -> ::1
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return HostPort{std::move(host), static_cast<uint16_t>(port)};
}

Expected<SentinelAnswer, std::string> sentinel_master_addr(const std::vector<std::string>& sentinels,
                                                           const std::string& name,
                                                           std::chrono::milliseconds timeout) {
  if (sentinels.empty()) return unexpected(std::string("no sentinels configured"));
  std::string errors;
  for (std::size_t i = 0; i < sentinels.size(); ++i) {
    auto hp = parse_host_port(sentinels[i]);
    std::string err;
    if (!hp) {
      err = hp.error();
    } else if (Ctx c = connect(*hp, timeout, err)) {
      Reply r = command(c.get(), {"SENTINEL", "get-master-addr-by-name", name});
      if (!r) {
        err = fmt::format("{}: {}", hp->str(), c->errstr);
      } else if (r->type == REDIS_REPLY_ERROR) {
        err = fmt::format("{}: {}", hp->str(), std::string(r->str, r->len));
      } else if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
                 r->element[0]->type != REDIS_REPLY_STRING ||
                 r->element[1]->type != REDIS_REPLY_STRING) {
        err = fmt::format("{}: does not know master '{}'", hp->str(), name);
      } else {
        std::string addr = std::string(r->element[0]->str, r->element[0]->len) + ":" +
                           std::string(r->element[1]->str, r->element[1]->len);
        auto m = parse_host_port(addr);
        if (m) return SentinelAnswer{std::move(*m), i};
        err = fmt::format("{}: answered {}", hp->str(), m.error());
      }
    }
    if (!errors.empty()) errors += "; ";
    errors += err;
  }
  return unexpected(fmt::format("no sentinel named master '{}': {}", name, errors));
}

Expected<std::string, std::string> redis_role(redisContext* c) {
  Reply r = command(c, {"ROLE"});
  if (!r) return unexpected(fmt::format("ROLE: {}", c->errstr));
  if (r->type == REDIS_REPLY_ERROR) return unexpected(fmt::format("ROLE: {}", std::string(r->str, r->len)));
  if (r->type != REDIS_REPLY_ARRAY || r->elements < 1 ||
      (r->element[0]->type != REDIS_REPLY_STRING && r->element[0]->type != REDIS_REPLY_STATUS))
    return unexpected(std::string("ROLE: malformed reply"));
  return std::string(r->element[0]->str, r->element[0]->len);
}

redisContext* open_redis_master(const RedisEndpoint& ep, std::string& err, HostPort* where) {
  HostPort hp{ep.host, ep.port};
  const bool via_sentinel = !ep.sentinel_master.empty();
  if (via_sentinel) {
    auto a = sentinel_master_addr(ep.sentinels, ep.sentinel_master, ep.sentinel_timeout);
    if (!a) {
      err = a.error();
      return nullptr;
    }
    hp = a->master;
  }
  Ctx c = connect(hp, ep.timeout, err);
  if (!c) return nullptr;
  redisEnableKeepAlive(c.get());
  if (!ep.password.empty()) {
    std::vector<std::string> args{"AUTH"};
    if (!ep.user.empty()) args.push_back(ep.user);
    args.push_back(ep.password);
    Reply r = command(c.get(), args);
    if (!r) {
      err = fmt::format("AUTH on {}: {}", hp.str(), c->errstr);
      return nullptr;
    }
    if (r->type == REDIS_REPLY_ERROR) {
      err = fmt::format("AUTH on {} refused: {}", hp.str(), std::string(r->str, r->len));
      return nullptr;
    }
  }
  if (via_sentinel) {
    // The guideline: a sentinel may still name the old master for a moment; only a server
    // that says it is a master is one.
    auto role = redis_role(c.get());
    if (!role) {
      err = fmt::format("{} (named by Sentinel): {}", hp.str(), role.error());
      return nullptr;
    }
    if (*role != "master") {
      err = fmt::format("{} (named by Sentinel as master '{}') is a {}", hp.str(),
                        ep.sentinel_master, *role);
      return nullptr;
    }
  }
  if (where != nullptr) *where = hp;
  return c.release();
}

}  // namespace sdn::data
