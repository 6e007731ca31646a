// The cluster's Redis connection and its Lua scripts (redis_link.hpp).
//
// Numbers in Redis Lua are doubles and tostring() formats them with %.14g, so a 64-bit
// generation would lose digits: generations stay strings inside the scripts (SET of the
// client's string, INCR followed by a GET of the exact text), compared as decimal strings.
#include "cluster/redis_link.hpp"

#include <hiredis/hiredis.h>

#include <array>
#include <string_view>

namespace sdn::cluster {
namespace {

// KEYS[1] lease, KEYS[2] generation; ARGV[1] owner id, ARGV[2] lease ms, ARGV[3] proposed
// generation (decimal, no leading zeros). Free lease: the generation becomes
// max(stored + 1, proposed) (the proposal is time based, so it keeps growing even when a Redis
// failover lost the last increment). Returns {1, generation, fresh} or {0, current value}.
constexpr const char* kAcquire = R"lua(
local cur = redis.call('GET', KEYS[1])
if cur then return {0, cur} end
local g = redis.call('GET', KEYS[2])
local p = ARGV[3]
local fresh = 0
local gen
if not g then
  fresh = 1
  redis.call('SET', KEYS[2], p)
  gen = p
elseif #p > #g or (#p == #g and p > g) then
  redis.call('SET', KEYS[2], p)
  gen = p
else
  redis.call('INCR', KEYS[2])
  gen = redis.call('GET', KEYS[2])
end
redis.call('SET', KEYS[1], ARGV[1] .. ' ' .. gen, 'PX', ARGV[2])
return {1, gen, fresh}
)lua";

// KEYS = leases; ARGV[1] lease ms, ARGV[1 + i] the value KEYS[i] must still hold.
// Returns per key: 1 (renewed), its other value, or '' (gone).
constexpr const char* kRenew = R"lua(
local out = {}
for i, k in ipairs(KEYS) do
  local cur = redis.call('GET', k)
  if cur == ARGV[i + 1] then
    redis.call('PEXPIRE', k, ARGV[1])
    out[i] = 1
  elseif cur then
    out[i] = cur
  else
    out[i] = ''
  end
end
return out
)lua";

// KEYS = leases; ARGV[i] = the value KEYS[i] must hold to be deleted. Returns how many were.
constexpr const char* kRelease = R"lua(
local n = 0
for i, k in ipairs(KEYS) do
  if redis.call('GET', k) == ARGV[i] then
    redis.call('DEL', k)
    n = n + 1
  end
end
return n
)lua";

// KEYS[1] leader lease, KEYS[2] target; ARGV[1] "<id> <generation>", ARGV[2] value,
// ARGV[3] ttl ms ('0' = none). 1 = written, 0 = fenced off.
constexpr const char* kFencedSet = R"lua(
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[3] ~= '0' then
  redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])
else
  redis.call('SET', KEYS[2], ARGV[2])
end
return 1
)lua";

// KEYS[1] member key, KEYS[2] members set; ARGV[1] id, ARGV[2] lease ms, ARGV[3] value,
// ARGV[4] member key prefix. Heartbeat, then the live members (set entries whose key exists;
// the others are removed).
constexpr const char* kHeartbeat = R"lua(
redis.call('SET', KEYS[1], ARGV[3], 'PX', ARGV[2])
redis.call('SADD', KEYS[2], ARGV[1])
local live = {}
for _, m in ipairs(redis.call('SMEMBERS', KEYS[2])) do
  if redis.call('EXISTS', ARGV[4] .. m) == 1 then
    live[#live + 1] = m
  else
    redis.call('SREM', KEYS[2], m)
  end
end
return live
)lua";

// KEYS = per-switch sorted sets of connected members (score: until when, Redis ms);
// ARGV[1] id, ARGV[2] lease ms, ARGV[3] '1' add/refresh, '0' remove.
constexpr const char* kConn = R"lua(
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease = tonumber(ARGV[2])
for _, k in ipairs(KEYS) do
  if ARGV[3] == '1' then
    redis.call('ZADD', k, string.format('%.0f', now + lease), ARGV[1])
    redis.call('PEXPIRE', k, 3 * lease)
  else
    redis.call('ZREM', k, ARGV[1])
  end
  redis.call('ZREMRANGEBYSCORE', k, '-inf', string.format('%.0f', now))
end
return #KEYS
)lua";

// KEYS = lease1, conn1, lease2, conn2, ...: per switch its lease value ('' = free) and the
// members connected to it now.
constexpr const char* kInspect = R"lua(
local t = redis.call('TIME')
local now = string.format('%.0f', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
local out = {}
for i = 1, #KEYS, 2 do
  out[#out + 1] = redis.call('GET', KEYS[i]) or ''
  out[#out + 1] = redis.call('ZRANGEBYSCORE', KEYS[i + 1], '(' .. now, '+inf')
end
return out
)lua";

constexpr std::array<const char*, static_cast<std::size_t>(Script::kCount)> kScripts = {
    kAcquire, kRenew, kRelease, kFencedSet, kHeartbeat, kConn, kInspect};

// eval() cannot know the SHA1 (a link learns it from SCRIPT LOAD), so it writes this marker and
// the script's index; run() puts the link's SHA1 in its place.
constexpr std::string_view kShaPlaceholder = "\x01sha";

}  // namespace

void ReplyDeleter::operator()(redisReply* r) const {
  if (r != nullptr) freeReplyObject(r);
}

RedisLink::~RedisLink() { drop(); }

void RedisLink::drop() {
  if (ctx_ != nullptr) redisFree(ctx_);
  ctx_ = nullptr;
}

bool RedisLink::connect() {
  drop();
  data::HostPort where;
  ctx_ = data::open_redis_master(ep_, err_, &where);
  if (ctx_ == nullptr) return false;
  address_ = where.str();
  if (!load_scripts()) {
    drop();
    return false;
  }
  return true;
}

bool RedisLink::load_scripts() {
  std::vector<Argv> cmds;
  for (const char* s : kScripts) cmds.push_back({"SCRIPT", "LOAD", s});
  // Sent raw (not through run(), which would substitute placeholders).
  for (const auto& c : cmds) {
    std::vector<const char*> a;
    std::vector<std::size_t> l;
    for (const auto& x : c) {
      a.push_back(x.c_str());
      l.push_back(x.size());
    }
    redisAppendCommandArgv(ctx_, static_cast<int>(a.size()), a.data(), l.data());
  }
  for (std::size_t i = 0; i < cmds.size(); ++i) {
    void* raw = nullptr;
    if (redisGetReply(ctx_, &raw) != REDIS_OK) {
      err_ = std::string("SCRIPT LOAD: ") + ctx_->errstr;
      return false;
    }
    Reply r(static_cast<redisReply*>(raw));
    if (r->type != REDIS_REPLY_STRING) {
      err_ = "SCRIPT LOAD: " + reply_string(r.get());
      return false;
    }
    sha_[i] = reply_string(r.get());
  }
  return true;
}

Argv RedisLink::eval(Script s, const std::vector<std::string>& keys, const std::vector<std::string>& args) {
  Argv a;
  a.reserve(3 + keys.size() + args.size());
  a.emplace_back("EVALSHA");
  a.emplace_back(std::string(kShaPlaceholder) + std::to_string(static_cast<int>(s)));
  a.emplace_back(std::to_string(keys.size()));
  a.insert(a.end(), keys.begin(), keys.end());
  a.insert(a.end(), args.begin(), args.end());
  return a;
}

std::optional<std::vector<Reply>> RedisLink::run(const std::vector<Argv>& cmds) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (ctx_ == nullptr) return std::nullopt;
    for (const auto& c : cmds) {
      std::vector<const char*> a;
      std::vector<std::size_t> l;
      std::string sha;
      for (std::size_t i = 0; i < c.size(); ++i) {
        if (i == 1 && c[0] == "EVALSHA" && c[1].rfind(kShaPlaceholder, 0) == 0) {
          sha = sha_[static_cast<std::size_t>(std::stoi(c[1].substr(kShaPlaceholder.size())))];
          a.push_back(sha.c_str());
          l.push_back(sha.size());
          continue;
        }
        a.push_back(c[i].c_str());
        l.push_back(c[i].size());
      }
      redisAppendCommandArgv(ctx_, static_cast<int>(a.size()), a.data(), l.data());
    }
    std::vector<Reply> out;
    bool noscript = false;
    for (std::size_t i = 0; i < cmds.size(); ++i) {
      void* raw = nullptr;
      if (redisGetReply(ctx_, &raw) != REDIS_OK) {
        err_ = ctx_->errstr;
        drop();
        return std::nullopt;
      }
      Reply r(static_cast<redisReply*>(raw));
      if (r->type == REDIS_REPLY_ERROR && reply_string(r.get()).rfind("NOSCRIPT", 0) == 0) noscript = true;
      out.push_back(std::move(r));
    }
    // A flushed script cache fails every EVALSHA of the batch (none ran): load and resend.
    if (!noscript || attempt == 1) return out;
    if (!load_scripts()) {
      drop();
      return std::nullopt;
    }
  }
  return std::nullopt;
}

std::string reply_string(const redisReply* r) {
  if (r == nullptr) return {};
  switch (r->type) {
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
    case REDIS_REPLY_ERROR:
      return std::string(r->str, r->len);
    case REDIS_REPLY_INTEGER:
      return std::to_string(r->integer);
    default:
      return {};
  }
}

bool reply_is_error(const redisReply* r) { return r == nullptr || r->type == REDIS_REPLY_ERROR; }
bool reply_is_nil(const redisReply* r) { return r == nullptr || r->type == REDIS_REPLY_NIL; }

long long reply_int(const redisReply* r, long long def) {
  if (r == nullptr) return def;
  if (r->type == REDIS_REPLY_INTEGER) return r->integer;
  return def;
}

std::size_t reply_elements(const redisReply* r) {
  return r != nullptr && r->type == REDIS_REPLY_ARRAY ? r->elements : 0;
}

const redisReply* reply_element(const redisReply* r, std::size_t i) {
  return i < reply_elements(r) ? r->element[i] : nullptr;
}

}  // namespace sdn::cluster
