// Data Driver (driver.hpp). Everything runs on the driver's work queue: the poll loop and the
// command callbacks, so the per-printer state needs no lock.
#include "apps/fleet/apps/driver.hpp"

#include <deque>
#include <future>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "apps/fleet/apps/jedi_client.hpp"
#include "core/log.hpp"

namespace sdn::fleet {

namespace {

struct Printer {
  std::string name;
  std::unique_ptr<JediClient> cli;
  std::deque<JobSpec> queue;
  std::optional<JobSpec> current;   // uploaded and not yet cleared off the bed
  std::string job_state;            // last seen Jedi job state
  bool printing_seen = false, finished_seen = false;
  std::string status = "unknown";
  bool maintenance_pending = false, abort_sent = false;
  double maintenance_min = 0;
  std::string maintenance_reason;
  std::string last_sig;
  uint64_t queue_version = 0;
};

}  // namespace

struct Driver::Impl {
  std::shared_ptr<data::Backends> backends;
  DriverConfig cfg;
  std::shared_ptr<const SimClock> clock;
  std::unique_ptr<data::Due> due;
  std::vector<Printer> printers;
  std::vector<data::Due::Subscription> subs;
  WorkQueue wq;
  std::atomic<uint64_t> polls{0}, uploads{0}, upload_rejects{0}, aborts{0}, maintenances{0},
      bad_commands{0}, bad_replies{0};
  std::atomic<bool> stopping{false};

  double now() const { return clock->now_min(); }

  void write(const std::string& key, Json v, unsigned flags = 0) {
    auto r = due->write(key, std::move(v), flags);
    if (!r) SDN_LOG_RATELIMITED(spdlog::level::warn, "fleet driver: write {}: {}", key, r.error());
  }

  void event(Printer& p, std::string_view what, const std::optional<JobSpec>& job, double at,
             Json extra = Json::object()) {
    Json e{{"event", what}, {"printer", p.name}, {"sim_min", at}};
    if (job) e["job"] = to_json(*job);
    for (auto& [k, v] : extra.items()) e[k] = v;
    write(fkeys::events(p.name), std::move(e), data::kNoWait);
  }

  void publish_queue(Printer& p) {
    Json ids = Json::array();
    for (const auto& j : p.queue) ids.push_back(to_json(j));
    ++p.queue_version;
    write(fkeys::queue(p.name), Json{{"jobs", std::move(ids)}, {"length", p.queue.size()},
                                     {"version", p.queue_version}, {"sim_min", now()}});
  }

  void on_command(std::size_t idx, const data::RecordPtr& r) {
    Printer& p = printers[idx];
    if (!r->value.is_json() || !r->value.json().is_object()) {
      ++bad_commands;
      return;
    }
    const Json& c = r->value.json();
    std::string op = c.value("op", "");
    if (op == "enqueue" && c.contains("jobs") && c["jobs"].is_array()) {
      bool front = c.value("front", false);
      std::vector<JobSpec> jobs;
      for (const auto& j : c["jobs"]) {
        auto s = job_from_json(j);
        if (!s) {
          ++bad_commands;
          SDN_LOG_RATELIMITED(spdlog::level::warn, "fleet driver: {}: bad job in enqueue: {}",
                              p.name, j.dump());
          return;
        }
        jobs.push_back(std::move(*s));
      }
      if (front) {
        // Urgent jobs go ahead of the queue, keeping their own order.
        p.queue.insert(p.queue.begin(), jobs.begin(), jobs.end());
      } else {
        p.queue.insert(p.queue.end(), jobs.begin(), jobs.end());
      }
      for (const auto& j : jobs) event(p, "queued", j, now(), Json{{"front", front}});
      publish_queue(p);
      poll_one(p);  // an idle printer starts at once
    } else if (op == "maintenance") {
      p.maintenance_pending = true;
      p.abort_sent = false;
      p.maintenance_min = c.value("minutes", 60.0);
      p.maintenance_reason = c.value("reason", "");
      poll_one(p);
    } else {
      ++bad_commands;
      SDN_LOG_RATELIMITED(spdlog::level::warn, "fleet driver: {}: unknown command {}", p.name,
                          c.dump());
    }
  }

  // One sensor's "current" or "target" from GET /printer (0 when the printer left it out).
  static double sensor_value(const Json& printer, std::string_view which, const char* field) {
    try {
      const Json& t = which == "bed" ? printer.at("bed").at("temperature")
                                     : printer.at("heads").at(0).at("extruders").at(0).at("hotend").at("temperature");
      return t.at(field).get<double>();
    } catch (...) {
      return 0;
    }
  }

  double when(const Json& job, const char* field) {
    if (job.is_object() && job.contains(field) && job[field].is_string())
      if (auto t = sim_min_of_iso(job[field].get<std::string>())) return *t;
    return now();
  }

  void poll_one(Printer& p) {
    double t = now();
    JediReply pr = p.cli->get("/printer");
    if (pr.status != 200 || !pr.body.is_object()) {
      if (p.status != "unreachable") {
        spdlog::warn("fleet driver: {}: GET /printer failed ({})", p.name,
                     pr.status ? fmt::format("HTTP {}", pr.status) : pr.error);
      }
      p.status = "unreachable";
      publish_state(p, Json(), t, pr.body);
      return;
    }
    std::string prev_status = p.status;
    p.status = pr.body.value("status", "unknown");
    if (prev_status == "maintenance" && p.status != "maintenance")
      event(p, "maintenance_end", std::nullopt, t);

    Json job;  // null: no job on the printer
    if (p.status == "printing" || p.current) {
      JediReply jr = p.cli->get("/print_job");
      if (jr.status == 200 && jr.body.is_object()) job = jr.body;
    }
    track_job(p, job, t);

    if (p.maintenance_pending) {
      std::string st = job.is_object() ? job.value("state", "") : "";
      if (job.is_object() && st != "wait_cleanup" && !p.abort_sent) {
        auto r = p.cli->put_json("/print_job/state", Json{{"target", "abort"}});
        if (r.status == 204 || r.status == 200) {
          p.abort_sent = true;
          ++aborts;
        } else {
          SDN_LOG_RATELIMITED(spdlog::level::warn, "fleet driver: {}: abort refused: HTTP {}",
                              p.name, r.status);
        }
      } else if (!job.is_object() || st == "wait_cleanup") {
        auto r = p.cli->put_json("/emulator/maintenance", Json{{"minutes", p.maintenance_min}});
        if (r.status == 204 || r.status == 200) {
          ++maintenances;
          p.maintenance_pending = false;
          if (p.current) {
            event(p, "cleaned", p.current, t);
            p.current.reset();
          }
          p.status = "maintenance";
          job = Json();
          event(p, "maintenance_start", std::nullopt, t,
                Json{{"minutes", p.maintenance_min}, {"reason", p.maintenance_reason}});
        }
      }
    }

    if (p.status == "idle" && !p.current && !p.maintenance_pending && !p.queue.empty()) {
      JobSpec next = p.queue.front();
      auto r = p.cli->upload(next.id, gcode_for(next.id, next.print_min));
      if (r.status == 201) {
        ++uploads;
        p.queue.pop_front();
        p.current = next;
        p.job_state = "pre_print";
        p.printing_seen = p.finished_seen = false;
        p.status = "printing";
        job = r.body;
        event(p, "started", next, when(r.body, "datetime_started"));
        publish_queue(p);
      } else if (r.status >= 400 && r.status < 500 && r.status != 405) {
        ++upload_rejects;
        spdlog::error("fleet driver: {}: upload of {} refused: HTTP {} {}", p.name, next.id,
                      r.status, r.body.dump());
        p.queue.pop_front();
        event(p, "rejected", next, t, Json{{"http", r.status}});
        publish_queue(p);
      }
    }
    publish_state(p, job, t, pr.body);
  }

  void track_job(Printer& p, const Json& job, double t) {
    if (!p.current) return;
    if (!job.is_object()) {  // the bed was cleared: the job is gone
      if (!p.finished_seen) {
        // It ended and was cleared between two polls: the printer's history has the result.
        JediReply h = p.cli->get("/history/print_jobs");
        if (h.status == 200 && h.body.is_array()) {
          for (const auto& old : h.body) {
            if (old.is_object() && old.value("name", "") == p.current->id) {
              finish(p, old, t);
              break;
            }
          }
        }
      }
      event(p, "cleaned", p.current, t);
      p.current.reset();
      return;
    }
    if (job.value("name", "") != p.current->id) return;  // someone else's job (not ours)
    std::string st = job.value("state", "");
    std::string result = job.value("result", "");
    if (st == "printing" && !p.printing_seen) {
      p.printing_seen = true;
      event(p, "printing", p.current, t,
            Json{{"time_total_s", job.value("time_total", 0.0)}});
    }
    if (!p.finished_seen && !result.empty()) finish(p, job, t);
    p.job_state = st;
  }

  // The job's result is known (from /print_job or the history): one finished/aborted/failed.
  void finish(Printer& p, const Json& job, double t) {
    std::string result = job.value("result", "");
    if (result.empty()) return;
    p.finished_seen = true;
    double at = job.contains("datetime_finished") ? when(job, "datetime_finished") : t;
    if (result == "Finished") {
      event(p, "finished", p.current, at);
    } else {
      event(p, result == "Aborted" ? "aborted" : "failed", p.current, at,
            Json{{"result", result}});
      // A print that failed on its own (an anomaly nobody stopped) is printed again here.
      if (result != "Aborted") {
        p.queue.push_front(*p.current);
        publish_queue(p);
      }
    }
  }

  void publish_state(Printer& p, const Json& job, double t, const Json& printer) {
    Json s{{"status", p.status},
           {"sim_min", t},
           {"queue_length", p.queue.size()},
           {"maintenance_pending", p.maintenance_pending}};
    if (job.is_object()) {
      Json j{{"state", job.value("state", "")}, {"progress", job.value("progress", 0.0)},
             {"time_elapsed_s", job.value("time_elapsed", 0.0)},
             {"time_total_s", job.value("time_total", 0.0)}, {"result", job.value("result", "")},
             {"name", job.value("name", "")}};
      if (p.current) j["spec"] = to_json(*p.current);
      s["job"] = std::move(j);
    } else {
      s["job"] = nullptr;
    }
    std::string sig = fmt::format("{}|{}|{}|{}", p.status,
                                  job.is_object() ? job.value("name", "") : "",
                                  job.is_object() ? job.value("state", "") : "",
                                  p.maintenance_pending);
    bool changed = sig != p.last_sig;
    p.last_sig = std::move(sig);
    // Changes are archived (replay needs them); the steady stream of polls is Updates only.
    write(fkeys::state(p.name), s, changed ? data::kNoWait : data::kPubOnly);
    if (changed) write(fkeys::job(p.name), s["job"], 0);
    if (printer.is_object()) {
      for (const char* which : {"hotend", "bed"}) {
        write(fkeys::sensor(p.name, which),
              Json{{"current", sensor_value(printer, which, "current")},
                   {"target", sensor_value(printer, which, "target")},
                   {"sim_min", t}, {"job_state", job.is_object() ? job.value("state", "") : ""}},
              data::kPubOnly);
      }
    }
  }

  void poll_all() {
    if (stopping) return;
    ++polls;
    for (auto& p : printers) {
      try {
        poll_one(p);
      } catch (const std::exception& e) {  // a printer answering JSON of the wrong shape
        ++bad_replies;
        SDN_LOG_RATELIMITED(spdlog::level::warn, "fleet driver: {}: bad reply: {}", p.name, e.what());
      }
    }
    wq.post_after(cfg.poll_interval, [this] { poll_all(); });
  }
};

Driver::Driver(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Driver::~Driver() {
  impl_->stopping = true;
  impl_->wq.post([] {});
  impl_->subs.clear();
  impl_->wq.stop();
}

Expected<std::unique_ptr<Driver>, std::string> Driver::start(
    std::shared_ptr<data::Backends> backends, DriverConfig cfg,
    std::shared_ptr<const SimClock> clock) {
  if (cfg.printers.empty()) return unexpected(std::string("fleet driver: no printers"));
  auto impl = std::make_unique<Impl>();
  impl->backends = backends;
  impl->clock = std::move(clock);
  impl->cfg = cfg;
  impl->due = std::make_unique<data::Due>(backends);
  std::vector<data::Capability> caps{{"fleet/**", std::nullopt, false}};
  std::vector<data::Interest> ints{{"fleet/*/command", std::nullopt}};
  auto r = impl->due->init(std::string(kDriverApp), data::kProducer | data::kConsumer, ints, caps);
  if (!r) return unexpected("fleet driver: " + r.error());
  for (const auto& ep : cfg.printers) {
    Printer p;
    p.name = ep.name;
    p.cli = std::make_unique<JediClient>(cfg.host, ep.port, cfg.http_timeout);
    auto pr = p.cli->pair("sdnator-fleet-driver", std::chrono::milliseconds(1), cfg.pair_deadline);
    if (!pr) return unexpected(fmt::format("fleet driver: {} ({}:{}): {}", ep.name, cfg.host, ep.port, pr.error()));
    impl->printers.push_back(std::move(p));
  }
  Json fleet = Json::array();
  for (const auto& ep : cfg.printers) fleet.push_back(Json{{"name", ep.name}, {"port", ep.port}});
  impl->write(fkeys::printers(), Json{{"printers", fleet}, {"count", cfg.printers.size()}},
              data::kNoWait);
  Impl* raw = impl.get();
  for (std::size_t i = 0; i < raw->printers.size(); ++i) {
    auto sub = raw->due->observe(
        fkeys::command(raw->printers[i].name),
        [raw, i](const data::RecordPtr& rec) { raw->on_command(i, rec); }, raw->wq.executor());
    if (!sub) return unexpected("fleet driver: " + sub.error());
    raw->subs.push_back(std::move(*sub));
  }
  raw->wq.post([raw] { raw->poll_all(); });
  return std::unique_ptr<Driver>(new Driver(std::move(impl)));
}

DriverStats Driver::stats() const {
  DriverStats s;
  s.polls = impl_->polls;
  s.uploads = impl_->uploads;
  s.upload_rejects = impl_->upload_rejects;
  s.aborts = impl_->aborts;
  s.maintenances = impl_->maintenances;
  s.bad_commands = impl_->bad_commands;
  s.bad_replies = impl_->bad_replies;
  // Client counters are touched only on the driver thread; read them there.
  auto pr = std::make_shared<std::promise<std::pair<uint64_t, uint64_t>>>();
  auto fut = pr->get_future();
  Impl* impl = impl_.get();
  impl->wq.post([impl, pr] {
    uint64_t req = 0, fail = 0;
    for (auto& p : impl->printers) {
      req += p.cli->requests();
      fail += p.cli->failures();
    }
    pr->set_value({req, fail});
  });
  if (fut.wait_for(std::chrono::seconds(2)) == std::future_status::ready) {
    auto [req, fail] = fut.get();
    s.requests = req;
    s.http_failures = fail;
  }
  return s;
}

}  // namespace sdn::fleet
