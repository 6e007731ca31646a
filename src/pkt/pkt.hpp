// Umbrella header for the pkt layer: parse() and the builders.
#pragma once

#include "pkt/addr.hpp"      // IWYU pragma: export
#include "pkt/build.hpp"     // IWYU pragma: export
#include "pkt/checksum.hpp"  // IWYU pragma: export
#include "pkt/parse.hpp"     // IWYU pragma: export
