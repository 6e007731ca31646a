// `sdnator fleet run --api`: the northbound server on a fleet run's backends, with no switch
// runtime (its switch routes answer 503; /api/v1/fleet and the dashboard's fleet panel work).
#include "bin/fleet_wiring.hpp"

#include <spdlog/spdlog.h>

#include "apps/fleet/apps/cli.hpp"
#include "northbound/server.hpp"

namespace sdn::bin {

void install_fleet_api(std::string version) {
  fleet::set_api_factory([version](const std::string& listen) -> fleet::RunAttachment {
    return [listen, version](std::shared_ptr<data::Backends> b, const data::Coordinator* c)
               -> Expected<std::shared_ptr<void>, std::string> {
      northbound::NorthboundConfig cfg;
      if (auto r = northbound::set_listen(cfg, listen); !r) return unexpected("--api: " + r.error());
      if (!northbound::is_loopback(cfg.host))
        return unexpected(std::string("--api: a fleet run serves loopback only (no token support here)"));
      northbound::Sources src;
      src.backends = std::move(b);
      src.coordinator = c;
      src.version = version;
      auto server = std::make_shared<northbound::Server>(cfg, std::move(src));
      auto port = server->start();
      if (!port) return unexpected("--api: " + port.error());
      spdlog::info("fleet dashboard on http://{}:{}/", cfg.host, *port);
      return std::shared_ptr<void>(server);
    };
  });
}

}  // namespace sdn::bin
