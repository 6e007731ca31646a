// libFuzzer target for what a printer's clients send: the first byte picks the parser, the rest
// is its input. Aborts only on a broken promise: a parsed challenge whose answer does not parse
// back with the same fields and the digest the server would compute, header keys that are not
// lower case, or a G-code print time outside (0, kMaxPrintTimeS].
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "apps/fleet/assets/digest.hpp"
#include "apps/fleet/assets/gcode.hpp"

namespace {

void require(bool ok) {
  if (!ok) std::abort();
}

void challenge(std::string_view in) {
  auto c = sdn::fleet::digest::parse_challenge(in);
  if (!c) return;
  std::string h = sdn::fleet::digest::authorization(*c, "PUT", "/api/v1/print_job/state", "0123abcd",
                                                     "secret", 7, "c0ffee");
  auto back = sdn::fleet::digest::parse_authorization(h);
  require(static_cast<bool>(back));
  require(back->at("username") == "0123abcd");
  require(back->at("realm") == c->realm);
  require(back->at("nonce") == c->nonce);
  require(back->at("uri") == "/api/v1/print_job/state");
  std::string nc = back->count("nc") ? back->at("nc") : "";
  std::string cnonce = back->count("cnonce") ? back->at("cnonce") : "";
  std::string qop = back->count("qop") ? back->at("qop") : "";
  require(back->at("response") ==
          sdn::fleet::digest::request_digest("0123abcd", c->realm, "secret", "PUT",
                                             "/api/v1/print_job/state", c->nonce, nc, cnonce, qop));
}

void authorization(std::string_view in) {
  auto a = sdn::fleet::digest::parse_authorization(in);
  if (!a) return;
  require(a->size() <= sdn::fleet::digest::kMaxParams);
  for (const auto& [k, v] : *a)
    for (char ch : k) require(!(ch >= 'A' && ch <= 'Z'));
}

void gcode(std::string_view in) {
  // Up to the first newline is the file name.
  auto nl = in.find('\n');
  std::string_view name = nl == std::string_view::npos ? std::string_view("x.gcode") : in.substr(0, nl);
  std::string_view body = nl == std::string_view::npos ? in : in.substr(nl + 1);
  auto g = sdn::fleet::inspect_gcode(name, body);
  if (!g) return;
  if (g->print_time_s) require(*g->print_time_s > 0 && *g->print_time_s <= sdn::fleet::kMaxPrintTimeS);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 3) {
    case 0: challenge(in); break;
    case 1: authorization(in); break;
    default: gcode(in); break;
  }
  return 0;
}
