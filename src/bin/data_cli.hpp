// `sdnator coordinator` and `sdnator data ...`: the data layer from the command line.
#pragma once

#include <CLI/CLI.hpp>

namespace sdn::bin {

// Adds the subcommands to `app`; after parsing, run_data_cli() runs whichever was chosen and
// returns its exit status, or -1 when none of them was.
void add_data_subcommands(CLI::App& app);
int run_data_cli();

}  // namespace sdn::bin
