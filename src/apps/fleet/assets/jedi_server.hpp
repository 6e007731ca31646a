// One emulated printer on the wire: a cpp-httplib server on its own port serving the Jedi REST
// API (/api/v1) plus the emulator extensions (/api/v1/emulator), in front of a PrinterModel and
// a JediAuth that share one mutex. The model is advanced lazily to the SimClock on each request.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "apps/fleet/assets/auth.hpp"
#include "apps/fleet/assets/printer.hpp"
#include "apps/fleet/assets/sim_clock.hpp"
#include "core/expected.hpp"

namespace sdn::fleet {

struct PrinterStats {
  uint64_t requests = 0, client_errors = 0, auth_failures = 0, server_errors = 0;
  ModelCounters model;
};

struct JediServerOptions {
  uint64_t seed = 1;                // the printer's own seed (fleet seed + index)
  double anomaly_probability = 0;
  double authorize_after_min = 0.5;
  std::size_t max_upload_bytes = 64 << 20;
  std::size_t threads = 2;          // cpp-httplib worker threads
  time_t keep_alive_timeout_s = 2;  // an idle keep-alive connection holds a worker this long
};

class JediServer {
 public:
  JediServer(PrinterSpec spec, std::shared_ptr<const SimClock> clock, JediServerOptions opt);
  ~JediServer();  // stop()
  JediServer(const JediServer&) = delete;
  JediServer& operator=(const JediServer&) = delete;

  // Binds and listens on host:port (0: an ephemeral port); returns the port.
  Expected<uint16_t, std::string> bind(const std::string& host, uint16_t port);
  // Starts the accept loop on its own thread; returns once the server is running.
  Expected<void, std::string> run();
  void stop();

  const std::string& name() const { return name_; }
  PrinterStats stats() const;
  bool inject_anomaly(Sensor s);

 private:
  using Req = httplib::Request;
  using Res = httplib::Response;

  void install_routes();
  // Answers 401 with a challenge (and counts it) unless the request carries valid credentials.
  bool authorized(const Req& req, Res& res, double now);
  // Answers {"message": msg} with status and counts it (client_errors or server_errors).
  void fail(Res& res, int status, std::string_view msg);
  nlohmann::json job_json(const JobView& j) const;
  nlohmann::json temperature_json(Sensor s, double now);
  nlohmann::json printer_json(double now);
  nlohmann::json stats_json() const;

  void get_print_job(const Req& req, Res& res);
  void get_print_job_field(const Req& req, Res& res);
  void post_print_job(const Req& req, Res& res);
  void put_print_job_state(const Req& req, Res& res);
  void post_auth_request(const Req& req, Res& res);
  void put_maintenance(const Req& req, Res& res);
  void post_anomaly(const Req& req, Res& res);

  const std::string name_;
  const std::shared_ptr<const SimClock> clock_;
  const JediServerOptions opt_;

  mutable std::mutex mu_;  // guards model_ and auth_
  PrinterModel model_;
  JediAuth auth_;

  std::atomic<uint64_t> requests_{0}, client_errors_{0}, auth_failures_{0}, server_errors_{0};

  httplib::Server server_;  // after the state its handlers use
  std::thread thread_;
  std::atomic<bool> listen_returned_{false};
  bool bound_ = false;
};

}  // namespace sdn::fleet
