// Envelopes and base64: round trips, the exact field layout of docs/data-wire.md, and clear errors
// for malformed input (what a Redis subscriber may receive from a foreign publisher).
#include <random>

#include <gtest/gtest.h>

#include "data/wire.hpp"

namespace sdn::data {
namespace {

TEST(Base64, KnownVectors) {
  EXPECT_EQ(base64_encode(""), "");
  EXPECT_EQ(base64_encode("f"), "Zg==");
  EXPECT_EQ(base64_encode("fo"), "Zm8=");
  EXPECT_EQ(base64_encode("foo"), "Zm9v");
  EXPECT_EQ(base64_encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(*base64_decode("Zm9vYmE="), "fooba");
  EXPECT_FALSE(base64_decode("Zm9"));
  EXPECT_FALSE(base64_decode("Zm9v!A=="));
  EXPECT_FALSE(base64_decode("Zg==Zg=="));
  EXPECT_FALSE(base64_decode("Zm9vYEm="));  // non-canonical: bits under the padding (fuzzer)
  EXPECT_FALSE(base64_decode("Zh=="));
}

TEST(Base64, RandomRoundTrip) {
  std::mt19937 rng(1);
  for (int n = 0; n < 500; ++n) {
    std::string s(rng() % 300, '\0');
    for (auto& c : s) c = static_cast<char>(rng());
    EXPECT_EQ(*base64_decode(base64_encode(s)), s);
  }
}

TEST(Envelope, JsonRoundTripAndLayout) {
  Record r;
  r.key = "network/s1/port/3/stats@stats";
  r.app_id = "stats";
  r.instance = "i-1";
  r.ts_ns = 1700000000123456789;
  r.seq = 42;
  r.value = Json{{"rx", 10}, {"name", "p\"3\n"}};
  std::string text = encode_envelope(r);
  Json j = Json::parse(text);
  EXPECT_EQ(j["k"], r.key);
  EXPECT_EQ(j["a"], "stats");
  EXPECT_EQ(j["i"], "i-1");
  EXPECT_EQ(j["t"].get<int64_t>(), r.ts_ns);
  EXPECT_EQ(j["s"].get<uint64_t>(), 42u);
  EXPECT_EQ(j["v"]["name"], "p\"3\n");
  auto back = decode_envelope(text);
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(back->key, r.key);
  EXPECT_EQ(back->value, r.value);
  EXPECT_EQ(back->seq, 42u);
  EXPECT_EQ(back->ts_ns, r.ts_ns);
}

TEST(Envelope, BytesRoundTrip) {
  Record r{"a/b@x", Value(Bytes{std::string("\x00\xff\x10zz", 5)}), "x", "i", 1, 1};
  std::string text = encode_envelope(r);
  EXPECT_NE(text.find("\"b\":\"AP8Qeno=\""), std::string::npos) << text;
  auto back = decode_envelope(text);
  ASSERT_TRUE(back);
  ASSERT_TRUE(back->value.is_bytes());
  EXPECT_EQ(back->value.bytes(), r.value.bytes());
}

TEST(Envelope, MalformedInputsGiveErrorsNamingTheField) {
  auto e = [](std::string_view s) {
    auto r = decode_envelope(s);
    EXPECT_FALSE(r) << s;
    return r ? std::string() : r.error();
  };
  EXPECT_NE(e("not json").find("not valid JSON"), std::string::npos);
  EXPECT_NE(e("[1,2]").find("not a JSON object"), std::string::npos);
  EXPECT_NE(e(R"({"a":"x","i":"i","t":1,"s":1,"v":1})").find("\"k\""), std::string::npos);
  EXPECT_NE(e(R"({"k":"a","i":"i","t":1,"s":1,"v":1})").find("\"a\""), std::string::npos);
  EXPECT_NE(e(R"({"k":"a","a":"x","t":1,"s":1,"v":1})").find("\"i\""), std::string::npos);
  EXPECT_NE(e(R"({"k":"a","a":"x","i":"i","t":"1","s":1,"v":1})").find("\"t\""), std::string::npos);
  EXPECT_NE(e(R"({"k":"a","a":"x","i":"i","t":1,"s":-1,"v":1})").find("\"s\""), std::string::npos);
  EXPECT_NE(e(R"({"k":"a","a":"x","i":"i","t":1,"s":1})").find("no value"), std::string::npos);
  EXPECT_NE(e(R"({"k":"a","a":"x","i":"i","t":1,"s":1,"v":1,"b":"AA=="})").find("both"), std::string::npos);
  EXPECT_NE(e(R"({"k":"a","a":"x","i":"i","t":1,"s":1,"b":"%%%"})").find("base64"), std::string::npos);
}

}  // namespace
}  // namespace sdn::data

namespace sdn::data {
namespace {

// The fast path (our own layout) and the general path (any field order, escapes) must agree.
TEST(Envelope, FastAndGeneralPathsAgree) {
  std::vector<Record> cases;
  cases.push_back(Record{"a/b@x", Value(Json("plain string")), "x", "i-1", 5, 1});
  cases.push_back(Record{"a/b@x", Value(Json("esc \"q\" \\ \n tab\t ü")), "x", "i", -7, 18446744073709551615ull});
  cases.push_back(Record{"a/b@x", Value(Json{{"n", 1}, {"l", {1, 2.5, nullptr, true}}}), "x", "i", INT64_MIN, 0});
  cases.push_back(Record{"a/b@x", Value(Json(-0.25)), "x", "i", INT64_MAX, 3});
  cases.push_back(Record{"a/b@x", Value(Bytes{std::string("\0\1\2\3", 4)}), "x", "i", 0, 9});
  cases.push_back(Record{"a/b@x", Value(Bytes{""}), "x", "i", 1, 1});
  cases.push_back(Record{"a/b@x", Value(Json("")), "x", "i", 1, 1});
  static constexpr char kMixed[] = "\0\x01\x7f caf\xc3\xa9 \xf0\x9f\x98\x80";  // NUL, control, UTF-8
  cases.push_back(Record{"a/b@x", Value(Json(std::string(kMixed, sizeof kMixed - 1))), "x", "i", 1, 1});
  for (const Record& r : cases) {
    std::string canonical = encode_envelope(r);
    // The same fields in another order take the general path.
    Json j = Json::parse(canonical);
    std::string reordered = "{\"v\":null}";
    Json o = Json::object();
    for (const char* f : {"s", "t", "i", "a", "k", "v", "b"})
      if (j.contains(f)) o[f] = j[f];
    reordered = o.dump();
    auto fast = decode_envelope(canonical);
    auto slow = decode_envelope(reordered);
    ASSERT_TRUE(fast) << canonical;
    ASSERT_TRUE(slow) << reordered;
    EXPECT_EQ(fast->key, slow->key);
    EXPECT_EQ(fast->app_id, slow->app_id);
    EXPECT_EQ(fast->instance, slow->instance);
    EXPECT_EQ(fast->ts_ns, slow->ts_ns) << canonical;
    EXPECT_EQ(fast->seq, slow->seq) << canonical;
    EXPECT_EQ(fast->value, slow->value) << canonical;
    EXPECT_EQ(fast->value, r.value) << canonical;
  }
  // Invalid UTF-8 in a string value is replaced (as nlohmann does), never sent raw.
  for (std::string bad : {std::string("\xff"), std::string("\xc0\x80"), std::string("\xed\xa0\x80"),
                          std::string("ok\xe2\x82")}) {
    Record r{"a/b@x", Value(Json(bad)), "x", "i", 1, 1};
    std::string text = encode_envelope(r);
    auto back = decode_envelope(text);
    ASSERT_TRUE(back) << text;
    EXPECT_NE(back->value.json().get<std::string>(), bad);
    EXPECT_NE(back->value.json().get<std::string>().find("\xef\xbf\xbd"), std::string::npos);
  }
  // Near misses of the layout still decode (general path) or fail with the general errors.
  EXPECT_TRUE(decode_envelope(R"({"k":"a\/b@x","a":"x","i":"i","t":1,"s":1,"v":1})"));
  EXPECT_FALSE(decode_envelope(R"({"k":"a","a":"x","i":"i","t":01,"s":1,"v":1})"));
  EXPECT_TRUE(decode_envelope(R"({"k":"a","a":"x","i":"i","t":1,"s":1,"v":1} )"));  // trailing space
  EXPECT_FALSE(decode_envelope(R"({"k":"a","a":"x","i":"i","t":99999999999999999999,"s":1,"v":1})"));
  EXPECT_FALSE(decode_envelope(R"({"k":"a","a":"x","i":"i","t":1,"s":1,"v":[1,}})"));
  EXPECT_FALSE(decode_envelope(R"({"k":"a","a":"x","i":"i","t":1,"s":1,"b":"Zh=="})"));
}

}  // namespace
}  // namespace sdn::data
