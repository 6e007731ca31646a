// Checks an uploaded print file the way the emulated printer accepts it: a *.gcode text file
// whose header is ';' comment lines (Cura's Griffin flavour), and reads the slicer's print time.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/expected.hpp"

namespace sdn::fleet {

// The header is scanned up to ;END_OF_HEADER, the first non-comment line, or these caps.
inline constexpr std::size_t kMaxHeaderScanLines = 4096;
inline constexpr std::size_t kMaxHeaderScanBytes = 256 * 1024;
// Largest ;PRINT.TIME: accepted (sim seconds; ~115 days).
inline constexpr double kMaxPrintTimeS = 1e7;

struct GcodeInfo {
  std::optional<double> print_time_s;  // ;PRINT.TIME:<seconds>, if present
  std::string flavor;                  // ;FLAVOR:<x> ("Griffin" for UM3 G-code), "" if absent
};

// Errors are sentences fit for a 400 {"message"} answer.
Expected<GcodeInfo, std::string> inspect_gcode(std::string_view filename, std::string_view content);

}  // namespace sdn::fleet
