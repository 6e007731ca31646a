// inspect_gcode: extension, text and header checks, and the ;PRINT.TIME: parser.
#include "apps/fleet/assets/gcode.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

namespace sdn::fleet {

namespace {

bool iends_with(std::string_view s, std::string_view suffix) {
  if (s.size() < suffix.size()) return false;
  return std::equal(suffix.begin(), suffix.end(), s.end() - static_cast<std::ptrdiff_t>(suffix.size()),
                    [](char want, char got) { return std::tolower(static_cast<unsigned char>(got)) == want; });
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

}  // namespace

Expected<GcodeInfo, std::string> inspect_gcode(std::string_view filename, std::string_view content) {
  if (!iends_with(filename, ".gcode")) {
    return unexpected(fmt::format("File '{}' is not a .gcode file", filename.substr(0, 128)));
  }
  if (content.empty()) return unexpected(std::string("Empty file"));
  if (std::memchr(content.data(), '\0', content.size()) != nullptr) {
    return unexpected(std::string("File is not G-code text (binary data)"));
  }
  std::string_view rest = content;
  if (rest.substr(0, 3) == "\xEF\xBB\xBF") rest.remove_prefix(3);  // UTF-8 byte order mark
  if (trim(rest.substr(0, std::min<std::size_t>(rest.size(), 4096))).substr(0, 1) != ";") {
    return unexpected(std::string("File is not G-code (no ';' header)"));
  }
  GcodeInfo info;
  std::size_t lines = 0, bytes = 0;
  while (!rest.empty() && lines < kMaxHeaderScanLines && bytes < kMaxHeaderScanBytes) {
    const auto nl = rest.find('\n');
    const std::string_view raw = rest.substr(0, nl);
    rest.remove_prefix(nl == std::string_view::npos ? rest.size() : nl + 1);
    ++lines;
    bytes += raw.size() + 1;
    const std::string_view line = trim(raw);
    if (line.empty()) continue;
    if (line.front() != ';') break;  // first command: the header is over
    if (line == ";END_OF_HEADER") break;
    if (line.substr(0, 8) == ";FLAVOR:" && info.flavor.empty()) {
      info.flavor = std::string(trim(line.substr(8)));
    } else if (line.substr(0, 12) == ";PRINT.TIME:" && !info.print_time_s) {
      const std::string_view v = trim(line.substr(12));
      double secs = 0;
      const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), secs);
      if (ec != std::errc() || end != v.data() + v.size() || !std::isfinite(secs) || secs <= 0 ||
          secs > kMaxPrintTimeS) {
        return unexpected(fmt::format("Bad ;PRINT.TIME: value '{}' (want seconds in (0, {:.0f}])",
                                      v.substr(0, 64), kMaxPrintTimeS));
      }
      info.print_time_s = secs;
    }
  }
  return info;
}

}  // namespace sdn::fleet
