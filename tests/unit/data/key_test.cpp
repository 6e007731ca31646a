// Keys: parsing, validation errors that name the bad part, matching, pattern intersection, the
// Redis glob, and the trie agreeing with Key::matches on random patterns.
#include <random>
#include <set>

#include <gtest/gtest.h>

#include "data/key.hpp"

namespace sdn::data {
namespace {

Key K(std::string_view s) {
  auto k = Key::parse(s);
  EXPECT_TRUE(k) << s << ": " << (k ? "" : k.error());
  return k ? *k : Key{};
}

std::string err(std::string_view s) {
  auto k = Key::parse(s);
  EXPECT_FALSE(k) << s << " parsed but should not";
  return k ? std::string() : k.error();
}

TEST(Key, ParsesSegmentsAppAndSpecs) {
  Key k = K("network/s12/port/3/stats@stats?freq=10&index=true");
  EXPECT_EQ(k.segments(), (std::vector<std::string>{"network", "s12", "port", "3", "stats"}));
  EXPECT_EQ(k.app_id(), "stats");
  EXPECT_EQ(k.spec("freq"), "10");
  EXPECT_EQ(k.spec("index"), "true");
  EXPECT_FALSE(k.spec("nope"));
  EXPECT_FALSE(k.is_pattern());
  EXPECT_EQ(k.path(), "network/s12/port/3/stats");
  EXPECT_EQ(k.channel(), "network/s12/port/3/stats@stats");
  EXPECT_EQ(k.str(), "network/s12/port/3/stats@stats?freq=10&index=true");
  EXPECT_EQ(K(k.str()), k);
}

TEST(Key, AllowsMacsAndDots) {
  Key k = K("network/hosts/00:11:22:33:44:55/ip/10.0.0.1");
  EXPECT_EQ(k.segments()[2], "00:11:22:33:44:55");
  EXPECT_EQ(k.app_id(), "");
}

TEST(Key, ErrorsNameTheBadPart) {
  EXPECT_NE(err("network//s1").find("segment 2 is empty"), std::string::npos);
  EXPECT_NE(err("network/s 1").find("segment 2 ('s 1')"), std::string::npos);
  EXPECT_NE(err("a/b*/c").find("segment 2 ('b*')"), std::string::npos);
  EXPECT_NE(err("a/**/c").find("segment 2 is '**'"), std::string::npos);
  EXPECT_NE(err("a/b@").find("app id"), std::string::npos);
  EXPECT_NE(err("a/b@x@y").find("more than one '@'"), std::string::npos);
  EXPECT_NE(err("a/b?freq").find("spec 'freq' has no '='"), std::string::npos);
  EXPECT_NE(err("a/b?f=1&f=2").find("given twice"), std::string::npos);
  EXPECT_NE(err("a/b?").find("no specs"), std::string::npos);
  EXPECT_NE(err("a/b?f=1&").find("trailing"), std::string::npos);
  EXPECT_NE(err("").find("empty"), std::string::npos);
  EXPECT_NE(err("/a").find("segment 1 is empty"), std::string::npos);
  EXPECT_NE(err("a/").find("segment 2 is empty"), std::string::npos);
  EXPECT_NE(err("@app").find("no path"), std::string::npos);
  EXPECT_NE(err("a/b[1]").find("'['"), std::string::npos);
  EXPECT_NE(err(std::string(2000, 'a')).find("longer than"), std::string::npos);
  EXPECT_NE(err(std::string(200, 'a')).find("longer than 128"), std::string::npos);
  std::string many;
  for (int i = 0; i < 40; ++i) many += (i ? "/s" : "s");
  EXPECT_NE(err(many).find("more than 32 segments"), std::string::npos);
  EXPECT_NE(err(std::string("a/b\x01")).find("0x01"), std::string::npos);
  // Concrete keys refuse wildcards.
  auto c = Key::parse_concrete("a/*/c");
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().find("wildcards"), std::string::npos);
  EXPECT_FALSE(Key::parse_concrete("a/b@*"));
}

TEST(Key, Matching) {
  Key key = K("network/s1/port/3/stats@stats");
  EXPECT_TRUE(K("network/s1/port/3/stats").matches(key));
  EXPECT_TRUE(K("network/s1/port/3/stats@stats").matches(key));
  EXPECT_TRUE(K("network/s1/port/3/stats@*").matches(key));
  EXPECT_FALSE(K("network/s1/port/3/stats@other").matches(key));
  EXPECT_TRUE(K("network/*/port/*/stats").matches(key));
  EXPECT_FALSE(K("network/*/stats").matches(key));  // '*' is exactly one segment
  EXPECT_TRUE(K("network/**").matches(key));
  EXPECT_TRUE(K("network/s1/port/3/**").matches(key));
  EXPECT_FALSE(K("network/s1/port/3/stats/**").matches(key));  // '**' needs at least one
  EXPECT_FALSE(K("network").matches(key));
  EXPECT_TRUE(K("**").matches(key));
  EXPECT_TRUE(K("*/*/*/*/*").matches(key));
  EXPECT_FALSE(K("*/*/*/*").matches(key));
  // Specs never take part in matching.
  EXPECT_TRUE(K("network/*/port/*/stats?freq=5").matches(key));
}

TEST(Key, Intersects) {
  EXPECT_TRUE(K("network/*/port/*/stats").intersects(K("network/s1/port/*/stats@stats")));
  EXPECT_TRUE(K("network/**").intersects(K("network/s1/port/3/stats@stats")));
  EXPECT_TRUE(K("network/s1/**").intersects(K("network/*/port/**")));
  EXPECT_FALSE(K("network/s1/**").intersects(K("network/s2/**")));
  EXPECT_FALSE(K("network/*").intersects(K("network/*/port")));
  EXPECT_FALSE(K("network/x@a").intersects(K("network/x@b")));
  EXPECT_TRUE(K("network/x").intersects(K("network/x@b")));
  EXPECT_TRUE(K("network/x@*").intersects(K("network/x@b")));
  EXPECT_FALSE(K("network/**").intersects(K("network")));
  EXPECT_TRUE(K("**").intersects(K("a/b/c")));
}

TEST(Key, RedisGlob) {
  EXPECT_EQ(redis_glob(K("network/*/stats")), "network/*/stats@*");
  EXPECT_EQ(redis_glob(K("network/**")), "network/*@*");
  EXPECT_EQ(redis_glob(K("a/b@app")), "a/b@app");
  EXPECT_EQ(redis_glob(K("a/*@*")), "a/*@*");
}

TEST(Key, WithApp) {
  Key k = K("a/b").with_app("x");
  EXPECT_EQ(k.channel(), "a/b@x");
  EXPECT_FALSE(k.is_pattern());
  EXPECT_TRUE(K("a/*").with_app("x").is_pattern());
}

TEST(KeyTrie, MatchesWhatKeyMatchesSays) {
  KeyTrie<int> t;
  std::vector<std::pair<Key, uint64_t>> pats;
  std::vector<std::string> texts = {"a/b/c",   "a/*/c",     "a/**",  "*/b/*", "**",  "a/b/c@x",
                                    "a/b/c@y", "a/b/*@*",   "a/b",   "b/**",  "*/*", "a/*/c/**",
                                    "a/b/c/d", "*/*/*/*@x", "x/y/z", "a/b/c"};
  for (std::size_t i = 0; i < texts.size(); ++i) pats.emplace_back(K(texts[i]), t.insert(K(texts[i]), int(i)));
  EXPECT_EQ(t.size(), texts.size());

  std::mt19937 rng(7);
  const char* segs[] = {"a", "b", "c", "d", "x", "y", "z"};
  const char* apps[] = {"", "x", "y"};
  for (int n = 0; n < 3000; ++n) {
    std::string s;
    int depth = 1 + int(rng() % 5);
    for (int d = 0; d < depth; ++d) s += (d ? "/" : "") + std::string(segs[rng() % 7]);
    std::string app = apps[rng() % 3];
    if (!app.empty()) s += "@" + app;
    Key key = K(s);
    std::multiset<int> got, want;
    t.match(key, [&](int v) { got.insert(v); });
    for (std::size_t i = 0; i < texts.size(); ++i)
      if (pats[i].first.matches(key)) want.insert(int(i));
    ASSERT_EQ(got, want) << s;
    EXPECT_EQ(t.any(key), !want.empty());
  }

  // Erase half, check again; erased ids are gone and the rest still match.
  for (std::size_t i = 0; i < texts.size(); i += 2) EXPECT_TRUE(t.erase(pats[i].second));
  EXPECT_FALSE(t.erase(pats[0].second));
  EXPECT_EQ(t.size(), texts.size() / 2);
  std::multiset<int> got;
  t.match(K("a/b/c@x"), [&](int v) { got.insert(v); });
  for (int v : got) EXPECT_EQ(v % 2, 1);
  EXPECT_FALSE(got.empty());

  // Copies are independent.
  KeyTrie<int> c = t;
  EXPECT_EQ(c.size(), t.size());
  for (std::size_t i = 1; i < texts.size(); i += 2) EXPECT_TRUE(c.erase(pats[i].second));
  EXPECT_TRUE(c.empty());
  EXPECT_EQ(t.size(), texts.size() / 2);
}

TEST(KeyTrie, ManyPatternsStillExact) {
  KeyTrie<int> t;
  for (int i = 0; i < 10000; ++i) t.insert(K("network/s" + std::to_string(i) + "/port/*/stats"), i);
  int hits = 0, value = -1;
  t.match(K("network/s4242/port/7/stats@stats"), [&](int v) { ++hits; value = v; });
  EXPECT_EQ(hits, 1);
  EXPECT_EQ(value, 4242);
}

}  // namespace
}  // namespace sdn::data
