// RedisAclAdmin (acl.hpp): one Redis ACL user per app, written by the Coordinator over its own
// admin connection (opened on first use, reopened after an error). Only the SHA-256 of a
// password ever travels, and only on this connection.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "data/acl.hpp"
#include "data/redis_updates_internal.hpp"

namespace sdn::data {

using namespace redis_detail;

struct RedisAclAdmin::Conn {
  ContextPtr ctx;
};

RedisAclAdmin::RedisAclAdmin(AclConfig cfg) : cfg_(std::move(cfg)), conn_(std::make_unique<Conn>()) {}
RedisAclAdmin::~RedisAclAdmin() = default;

Expected<void, std::string> RedisAclAdmin::command(const std::vector<std::string>& argv) {
  block_sigpipe();
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (!conn_->ctx) {
      std::string err;
      conn_->ctx = open_connection(cfg_.admin, err);
      if (!conn_->ctx) {
        ++errors_;
        return unexpected("redis acl admin: " + err);
      }
    }
    std::vector<const char*> a;
    std::vector<std::size_t> l;
    for (const auto& s : argv) {
      a.push_back(s.c_str());
      l.push_back(s.size());
    }
    ReplyPtr r(static_cast<redisReply*>(
        redisCommandArgv(conn_->ctx.get(), static_cast<int>(a.size()), a.data(), l.data())));
    if (!r) {  // connection broken (Redis restarted): reopen once
      conn_->ctx.reset();
      consume_pending_sigpipe();
      continue;
    }
    if (r->type == REDIS_REPLY_ERROR) {
      ++errors_;
      return unexpected(fmt::format("redis acl admin: {} {}: {}", argv[0],
                                    argv.size() > 1 ? argv[1] : "", reply_str(r.get())));
    }
    return {};
  }
  ++errors_;
  return unexpected(std::string("redis acl admin: connection lost twice"));
}

Expected<void, std::string> RedisAclAdmin::apply(const Grant& g) {
  std::vector<std::string> argv = {"ACL", "SETUSER", user(g.app)};
  for (auto& a : redis_setuser_args(g, app_password(cfg_.secret, g.app))) argv.push_back(std::move(a));
  return command(argv);
}

Expected<void, std::string> RedisAclAdmin::revoke(std::string_view app) {
  // Off first (no new AUTH), then drop what is connected; a user with no connections makes
  // CLIENT KILL answer an error, which is not one.
  std::vector<std::string> off = {"ACL", "SETUSER", user(app), "off", "clearselectors", "resetchannels", "-@all"};
  if (auto r = command(off); !r) return r;
  auto k = command({"CLIENT", "KILL", "USER", user(app)});
  if (!k && k.error().find("No such") == std::string::npos) return k;
  return {};
}

}  // namespace sdn::data
