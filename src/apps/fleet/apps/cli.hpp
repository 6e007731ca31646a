// `sdnator fleet ...`: the fleet case study from the command line (README "Fleet").
#pragma once

#include <CLI/CLI.hpp>

namespace sdn::fleet {
// Adds `fleet printers|run|experiment|replay` to the sdnator CLI.
void add_fleet_subcommands(CLI::App& app);
// After parsing: runs the fleet subcommand that was given and returns its exit status, or -1.
int run_fleet_cli();
}  // namespace sdn::fleet
