// `sdnator fleet ...`: the fleet case study from the command line (README "Fleet").
#pragma once

#include <CLI/CLI.hpp>

#include "apps/fleet/apps/run.hpp"

namespace sdn::fleet {
// Adds `fleet printers|run|experiment|replay` to the sdnator CLI.
void add_fleet_subcommands(CLI::App& app);
// After parsing: runs the fleet subcommand that was given and returns its exit status, or -1.
int run_fleet_cli();
// `fleet run --api HOST:PORT` hands the address to this factory (set by the binary, which owns
// the northbound layer) to build what serves the API on the run's backends.
using ApiFactory = std::function<RunAttachment(const std::string& listen)>;
void set_api_factory(ApiFactory f);
}  // namespace sdn::fleet
