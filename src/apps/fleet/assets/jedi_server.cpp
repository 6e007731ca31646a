// JediServer: routes, request parsing and JSON shapes of the emulated Jedi API. Every handler
// takes the printer's mutex, reads the SimClock and lets the model catch up before answering.
#include "apps/fleet/assets/jedi_server.hpp"

#include <chrono>
#include <cmath>
#include <limits>

#include <sys/socket.h>

#include <fmt/format.h>

#include "apps/fleet/assets/gcode.hpp"
#include "core/log.hpp"

namespace sdn::fleet {

namespace {

using json = nlohmann::json;

constexpr std::size_t kMaxJobNameBytes = 256;
constexpr std::size_t kMultipartSlackBytes = 1 << 20;  // boundaries, part headers, jobname
constexpr double kMaxMaintenanceMin = 1e6;
constexpr const char* kNoJob = "No print job";

// Invalid UTF-8 from a client (a job name, say) must not make dump() throw.
std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

void reply(httplib::Response& res, int status, const json& j) {
  res.status = status;
  res.set_content(dump(j), "application/json");
}

json message_json(std::string_view msg) { return json{{"message", std::string(msg)}}; }

// A form field from either a multipart part or an urlencoded body.
std::optional<std::string> form_field(const httplib::Request& req, const std::string& key) {
  if (req.has_file(key)) return req.get_file_value(key).content;
  if (req.has_param(key)) return req.get_param_value(key);
  return std::nullopt;
}

std::string iso_or_empty(const SimClock& clock, const std::optional<double>& min) {
  return min ? clock.iso(*min) : std::string();
}

json round2(double v) { return std::round(v * 100.0) / 100.0; }

}  // namespace

JediServer::JediServer(PrinterSpec spec, std::shared_ptr<const SimClock> clock, JediServerOptions opt)
    : name_(spec.name),
      clock_(std::move(clock)),
      opt_(opt),
      model_(std::move(spec), opt.seed, opt.anomaly_probability, clock_->now_min()),
      auth_(opt.authorize_after_min) {
  const std::size_t threads = std::max<std::size_t>(1, opt_.threads);
  server_.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  server_.set_keep_alive_timeout(opt_.keep_alive_timeout_s);
  // Headers and body go out in separate writes: without TCP_NODELAY, Nagle + delayed ACK hold
  // every answer on a keep-alive connection back by ~40 ms.
  server_.set_tcp_nodelay(true);
  // cpp-httplib's default also sets SO_REUSEPORT, which lets a second fleet bind a port that is
  // already serving and silently share its connections; keep only SO_REUSEADDR.
  server_.set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  const std::size_t max_payload = opt_.max_upload_bytes > std::numeric_limits<std::size_t>::max() - kMultipartSlackBytes
                                      ? std::numeric_limits<std::size_t>::max()
                                      : opt_.max_upload_bytes + kMultipartSlackBytes;
  server_.set_payload_max_length(max_payload);
  install_routes();
}

JediServer::~JediServer() { stop(); }

Expected<uint16_t, std::string> JediServer::bind(const std::string& host, uint16_t port) {
  if (bound_) return unexpected(fmt::format("{}: already bound", name_));
  int got = port;
  if (port == 0) {
    got = server_.bind_to_any_port(host);
    if (got <= 0) return unexpected(fmt::format("{}: cannot bind an ephemeral port on {}", name_, host));
  } else if (!server_.bind_to_port(host, port)) {
    return unexpected(fmt::format("{}: cannot bind {}:{}", name_, host, port));
  }
  bound_ = true;
  return static_cast<uint16_t>(got);
}

Expected<void, std::string> JediServer::run() {
  if (!bound_) return unexpected(fmt::format("{}: run() before bind()", name_));
  if (thread_.joinable()) return {};
  listen_returned_ = false;
  thread_ = std::thread([this] {
    server_.listen_after_bind();
    listen_returned_ = true;
  });
  // stop() is a no-op until the accept loop runs, so wait for it (the socket already listens).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!server_.is_running()) {
    if (listen_returned_) return unexpected(fmt::format("{}: accept loop ended at once", name_));
    if (std::chrono::steady_clock::now() > deadline) return unexpected(fmt::format("{}: accept loop did not start", name_));
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  return {};
}

void JediServer::stop() {
  if (!thread_.joinable()) return;
  // Retry: a stop() racing the start of the accept loop would otherwise be lost.
  while (!listen_returned_) {
    server_.stop();
    if (listen_returned_) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  thread_.join();
}

PrinterStats JediServer::stats() const {
  PrinterStats s;
  s.requests = requests_.load(std::memory_order_relaxed);
  s.client_errors = client_errors_.load(std::memory_order_relaxed);
  s.auth_failures = auth_failures_.load(std::memory_order_relaxed);
  s.server_errors = server_errors_.load(std::memory_order_relaxed);
  std::lock_guard lock(mu_);
  s.model = model_.counters();
  return s;
}

bool JediServer::inject_anomaly(Sensor s) {
  std::lock_guard lock(mu_);
  return model_.inject_anomaly(s, clock_->now_min());
}

void JediServer::fail(Res& res, int status, std::string_view msg) {
  if (status >= 500) {
    server_errors_.fetch_add(1, std::memory_order_relaxed);
  } else if (status >= 400) {
    client_errors_.fetch_add(1, std::memory_order_relaxed);
  }
  reply(res, status, message_json(msg));
}

bool JediServer::authorized(const Req& req, Res& res, double now) {
  auto ok = auth_.verify(req.get_header_value("Authorization"), req.method, req.target, now);
  if (ok) return true;
  auth_failures_.fetch_add(1, std::memory_order_relaxed);
  SDN_LOG_RATELIMITED(spdlog::level::debug, "{}: {} {} unauthorized: {}", name_, req.method, req.path, ok.error());
  res.set_header("WWW-Authenticate", auth_.challenge());
  fail(res, 401, "Authorization required");
  return false;
}

json JediServer::job_json(const JobView& j) const {
  return json{
      {"name", j.name},
      {"uuid", j.uuid},
      {"state", std::string(to_string(j.state))},
      {"progress", std::round(j.progress * 1e4) / 1e4},
      {"time_elapsed", std::llround(j.time_elapsed_s)},
      {"time_total", std::llround(j.time_total_s)},
      {"datetime_started", clock_->iso(j.started_min)},
      {"datetime_finished", iso_or_empty(*clock_, j.finished_min)},
      {"datetime_cleaned", iso_or_empty(*clock_, j.cleaned_min)},
      {"result", std::string(to_string(j.result))},
      {"source", "WEB_API"},
  };
}

json JediServer::temperature_json(Sensor s, double now) {
  const Temperature t = model_.temperature(s, now);
  return json{{"current", t.current}, {"target", round2(t.target)}};
}

json JediServer::printer_json(double now) {
  json hotend = json::object();
  hotend["temperature"] = temperature_json(Sensor::kHotend, now);
  json extruder = json::object();
  extruder["hotend"] = std::move(hotend);
  json head = json::object();
  head["extruders"] = json::array();
  head["extruders"].push_back(std::move(extruder));
  json bed = json::object();
  bed["temperature"] = temperature_json(Sensor::kBed, now);
  bed["type"] = "glass";
  json out = json::object();
  out["name"] = name_;
  out["status"] = std::string(to_string(model_.status(now)));
  out["bed"] = std::move(bed);
  out["heads"] = json::array();
  out["heads"].push_back(std::move(head));
  return out;
}

json JediServer::stats_json() const {
  const PrinterStats s = stats();
  return json{
      {"name", name_},
      {"requests", s.requests},
      {"client_errors", s.client_errors},
      {"auth_failures", s.auth_failures},
      {"server_errors", s.server_errors},
      {"jobs_started", s.model.jobs_started},
      {"jobs_finished", s.model.jobs_finished},
      {"jobs_failed", s.model.jobs_failed},
      {"jobs_aborted", s.model.jobs_aborted},
      {"anomalies", s.model.anomalies},
  };
}

void JediServer::install_routes() {
  server_.set_pre_routing_handler([this](const Req&, Res&) {
    requests_.fetch_add(1, std::memory_order_relaxed);
    return httplib::Server::HandlerResponse::Unhandled;
  });
  // Runs for every answer >= 400 before it is written. Our handlers fill the body (and count);
  // an empty body means cpp-httplib answered itself: no route (404), too large (413), bad
  // request line or method (400).
  server_.set_error_handler(httplib::Server::HandlerWithResponse([this](const Req&, Res& res) {
    if (res.body.empty()) {
      const char* msg = res.status == 404   ? "Not found"
                        : res.status == 413 ? "Upload too large"
                        : res.status == 400 ? "Bad request"
                                            : "Error";
      fail(res, res.status, msg);
    }
    return httplib::Server::HandlerResponse::Handled;
  }));
  server_.set_exception_handler([this](const Req& req, Res& res, std::exception_ptr ep) {
    std::string what = "unknown exception";
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    SDN_LOG_RATELIMITED(spdlog::level::warn, "{}: {} {} failed: {}", name_, req.method, req.path, what);
    fail(res, 500, "Internal error");
  });

  // ---- printer (reads need no authentication, as on the real printer) ----
  server_.Get("/api/v1/printer", [this](const Req&, Res& res) {
    std::lock_guard lock(mu_);
    reply(res, 200, printer_json(clock_->now_min()));
  });
  server_.Get("/api/v1/printer/status", [this](const Req&, Res& res) {
    std::lock_guard lock(mu_);
    reply(res, 200, std::string(to_string(model_.status(clock_->now_min()))));
  });
  server_.Get("/api/v1/printer/bed", [this](const Req&, Res& res) {
    std::lock_guard lock(mu_);
    reply(res, 200, json{{"temperature", temperature_json(Sensor::kBed, clock_->now_min())}, {"type", "glass"}});
  });
  server_.Get("/api/v1/printer/bed/temperature", [this](const Req&, Res& res) {
    std::lock_guard lock(mu_);
    reply(res, 200, temperature_json(Sensor::kBed, clock_->now_min()));
  });
  server_.Get("/api/v1/printer/bed/type", [](const Req&, Res& res) { reply(res, 200, "glass"); });
  server_.Get("/api/v1/printer/heads", [this](const Req&, Res& res) {
    std::lock_guard lock(mu_);
    reply(res, 200, printer_json(clock_->now_min())["heads"]);
  });
  server_.Get("/api/v1/printer/heads/0", [this](const Req&, Res& res) {
    std::lock_guard lock(mu_);
    reply(res, 200, printer_json(clock_->now_min())["heads"][0]);
  });
  server_.Get("/api/v1/printer/heads/0/extruders", [this](const Req&, Res& res) {
    std::lock_guard lock(mu_);
    reply(res, 200, printer_json(clock_->now_min())["heads"][0]["extruders"]);
  });
  server_.Get("/api/v1/printer/heads/0/extruders/0", [this](const Req&, Res& res) {
    std::lock_guard lock(mu_);
    reply(res, 200, printer_json(clock_->now_min())["heads"][0]["extruders"][0]);
  });
  server_.Get("/api/v1/printer/heads/0/extruders/0/hotend", [this](const Req&, Res& res) {
    std::lock_guard lock(mu_);
    reply(res, 200, json{{"temperature", temperature_json(Sensor::kHotend, clock_->now_min())}});
  });
  server_.Get("/api/v1/printer/heads/0/extruders/0/hotend/temperature", [this](const Req&, Res& res) {
    std::lock_guard lock(mu_);
    reply(res, 200, temperature_json(Sensor::kHotend, clock_->now_min()));
  });
  server_.Get("/api/v1/system/name", [this](const Req&, Res& res) { reply(res, 200, name_); });

  // ---- print job ----
  server_.Get("/api/v1/print_job", [this](const Req& req, Res& res) { get_print_job(req, res); });
  server_.Get(R"(/api/v1/print_job/([A-Za-z_]+))", [this](const Req& req, Res& res) { get_print_job_field(req, res); });
  server_.Post("/api/v1/print_job", [this](const Req& req, Res& res) { post_print_job(req, res); });
  server_.Put("/api/v1/print_job/state", [this](const Req& req, Res& res) { put_print_job_state(req, res); });
  server_.Get("/api/v1/history/print_jobs", [this](const Req&, Res& res) {
    std::lock_guard lock(mu_);
    json out = json::array();
    const auto& h = model_.history(clock_->now_min());
    for (auto it = h.rbegin(); it != h.rend(); ++it) out.push_back(job_json(*it));  // newest first
    reply(res, 200, out);
  });

  // ---- pairing ----
  server_.Post("/api/v1/auth/request", [this](const Req& req, Res& res) { post_auth_request(req, res); });
  server_.Get(R"(/api/v1/auth/check/([^/]*))", [this](const Req& req, Res& res) {
    std::lock_guard lock(mu_);
    const auto c = auth_.check(req.matches[1].str(), clock_->now_min());
    const char* msg = c == JediAuth::Check::kAuthorized     ? "authorized"
                      : c == JediAuth::Check::kUnauthorized ? "unauthorized"
                                                            : "unknown";
    reply(res, 200, message_json(msg));
  });
  server_.Get("/api/v1/auth/verify", [this](const Req& req, Res& res) {
    std::lock_guard lock(mu_);
    if (!authorized(req, res, clock_->now_min())) return;
    reply(res, 200, message_json("ok"));
  });

  // ---- emulator extensions (not part of Jedi) ----
  server_.Put("/api/v1/emulator/maintenance", [this](const Req& req, Res& res) { put_maintenance(req, res); });
  server_.Post("/api/v1/emulator/anomaly", [this](const Req& req, Res& res) { post_anomaly(req, res); });
  server_.Get("/api/v1/emulator/stats", [this](const Req& req, Res& res) {
    {
      std::lock_guard lock(mu_);
      if (!authorized(req, res, clock_->now_min())) return;
    }
    reply(res, 200, stats_json());
  });
}

void JediServer::get_print_job(const Req&, Res& res) {
  std::lock_guard lock(mu_);
  const auto j = model_.job(clock_->now_min());
  // Not counted as a client error: pollers of an idle printer get this all the time.
  if (!j) return reply(res, 404, message_json(kNoJob));
  reply(res, 200, job_json(*j));
}

void JediServer::get_print_job_field(const Req& req, Res& res) {
  const std::string field = req.matches[1].str();
  std::lock_guard lock(mu_);
  const auto j = model_.job(clock_->now_min());
  if (!j) return reply(res, 404, message_json(kNoJob));
  const json all = job_json(*j);
  const auto it = all.find(field);
  if (it == all.end()) return fail(res, 404, fmt::format("Unknown print job field '{}'", field.substr(0, 64)));
  reply(res, 200, *it);
}

void JediServer::post_print_job(const Req& req, Res& res) {
  std::lock_guard lock(mu_);
  const double now = clock_->now_min();
  if (!authorized(req, res, now)) return;
  if (!req.is_multipart_form_data() || !req.has_file("file")) {
    return fail(res, 400, "Missing 'file' part (multipart/form-data)");
  }
  const httplib::MultipartFormData file = req.get_file_value("file");
  if (file.content.size() > opt_.max_upload_bytes) {
    return fail(res, 413, fmt::format("Upload too large (limit {} bytes)", opt_.max_upload_bytes));
  }
  const auto info = inspect_gcode(file.filename, file.content);
  if (!info) return fail(res, 400, info.error());
  std::string jobname = form_field(req, "jobname").value_or("");
  if (jobname.empty()) jobname = file.filename.substr(0, file.filename.size() - 6);  // strip ".gcode"
  if (jobname.size() > kMaxJobNameBytes) jobname.resize(kMaxJobNameBytes);
  auto job = model_.start_job(std::move(jobname), info->print_time_s, now);
  if (!job) return fail(res, 405, "Printer is busy");
  reply(res, 201, job_json(*job));
}

void JediServer::put_print_job_state(const Req& req, Res& res) {
  std::lock_guard lock(mu_);
  const double now = clock_->now_min();
  if (!authorized(req, res, now)) return;
  const json body = json::parse(req.body, nullptr, false);
  if (body.is_discarded() || !body.is_object()) return fail(res, 400, "Body must be a JSON object");
  const auto t = body.find("target");
  if (t == body.end() || !t->is_string()) return fail(res, 400, "Missing string field 'target'");
  const std::string target = t->get<std::string>();
  Expected<void, ModelError> r = unexpected(ModelError::kBadArgument);
  if (target == "abort") {
    r = model_.abort(now);
  } else if (target == "pause") {
    r = model_.pause(now);
  } else if (target == "print") {
    r = model_.resume(now);
  } else {
    return fail(res, 400, "Unknown target (want abort, pause or print)");
  }
  if (r) {
    res.status = 204;
    return;
  }
  if (r.error() == ModelError::kNoJob) return fail(res, 404, kNoJob);
  fail(res, 405, fmt::format("Cannot {} in the current state", target));
}

void JediServer::post_auth_request(const Req& req, Res& res) {
  std::optional<std::string> application = form_field(req, "application");
  std::optional<std::string> user = form_field(req, "user");
  if (!application && !user && !req.body.empty()) {
    // Also accept a JSON body {"application": ..., "user": ...}.
    const json body = json::parse(req.body, nullptr, false);
    if (body.is_object()) {
      if (auto it = body.find("application"); it != body.end() && it->is_string()) application = it->get<std::string>();
      if (auto it = body.find("user"); it != body.end() && it->is_string()) user = it->get<std::string>();
    }
  }
  std::lock_guard lock(mu_);
  auto c = auth_.request(application.value_or(""), user.value_or(""), clock_->now_min());
  if (!c) return fail(res, c.error() == "Too many pairing requests" ? 503 : 400, c.error());
  reply(res, 200, json{{"id", c->id}, {"key", c->key}});
}

void JediServer::put_maintenance(const Req& req, Res& res) {
  std::lock_guard lock(mu_);
  const double now = clock_->now_min();
  if (!authorized(req, res, now)) return;
  const json body = json::parse(req.body, nullptr, false);
  if (body.is_discarded() || !body.is_object()) return fail(res, 400, "Body must be a JSON object");
  const auto m = body.find("minutes");
  if (m == body.end() || !m->is_number()) return fail(res, 400, "Missing number field 'minutes'");
  const double minutes = m->get<double>();
  if (!(std::isfinite(minutes) && minutes >= 0 && minutes <= kMaxMaintenanceMin)) {
    return fail(res, 400, fmt::format("'minutes' must be in [0, {:.0f}]", kMaxMaintenanceMin));
  }
  const auto r = model_.start_maintenance(minutes, now);
  if (!r) {
    if (r.error() == ModelError::kBadArgument) return fail(res, 400, "Bad 'minutes'");
    return fail(res, 405, "Printer is busy: a print job is still running");
  }
  res.status = 204;
}

void JediServer::post_anomaly(const Req& req, Res& res) {
  std::lock_guard lock(mu_);
  const double now = clock_->now_min();
  if (!authorized(req, res, now)) return;
  const json body = json::parse(req.body, nullptr, false);
  if (body.is_discarded() || !body.is_object()) return fail(res, 400, "Body must be a JSON object");
  const auto s = body.find("sensor");
  const auto sensor = (s != body.end() && s->is_string()) ? sensor_from_string(s->get<std::string>()) : std::nullopt;
  if (!sensor) return fail(res, 400, "Unknown sensor (want hotend or bed)");
  model_.inject_anomaly(*sensor, now);
  res.status = 204;
}

}  // namespace sdn::fleet
