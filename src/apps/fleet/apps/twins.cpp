// Digital Twins (twins.hpp). All callbacks run on the twins' work queue.
#include "apps/fleet/apps/twins.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/log.hpp"

namespace sdn::fleet {

namespace {

struct PrinterTwin {
  std::string name;
  // machine-state twin
  std::string status = "unknown";
  bool maintenance_pending = false;  // commanded by the fleet twin, not yet started
  double maintenance_until = 0;      // sim minute; > now while in maintenance
  std::optional<JobSpec> current;
  double started_at = 0;             // sim minute the current job was uploaded
  double time_total_min = 0;         // printing phase of the current job, once known
  double speed = 1.0, setup = 20;
  int speed_samples = 0, setup_samples = 0;
  // queue twin
  std::vector<JobSpec> queued;
  std::map<std::string, double> queued_at;  // job id -> sim minute it was queued
  double wait_sum = 0;
  int waits = 0;
  std::deque<Json> history;  // last jobs: id, started, finished, result
  uint64_t queue_version = 0;
  // anomaly twin
  int over[2] = {0, 0};      // consecutive out-of-band samples: hotend, bed
  bool anomaly = false;
  std::string anomaly_sensor;
  double anomaly_residual = 0;
  std::string last_machine_sig, last_queue_sig;
};

}  // namespace

struct Twins::Impl {
  std::shared_ptr<data::Backends> backends;
  TwinConfig cfg;
  std::shared_ptr<const SimClock> clock;
  std::unique_ptr<data::Due> due;
  std::map<std::string, PrinterTwin> twins;
  std::vector<data::Due::Subscription> subs;
  WorkQueue wq;
  std::atomic<uint64_t> anomalies{0}, maintenances{0}, returned{0}, bad{0};

  double now() const { return clock->now_min(); }

  void write(const std::string& key, Json v, unsigned flags = 0) {
    auto r = due->write(key, std::move(v), flags);
    if (!r) SDN_LOG_RATELIMITED(spdlog::level::warn, "fleet twins: write {}: {}", key, r.error());
  }

  // The printer named by a fleet/<p>/... key, or null.
  PrinterTwin* twin_of(const data::RecordPtr& r) {
    auto it = twins.find(std::string(fkeys::printer_of(r->key)));
    return it == twins.end() ? nullptr : &it->second;
  }

  double current_end(const PrinterTwin& t, double n) const {
    if (t.maintenance_until > n) return t.maintenance_until;
    double end = n;
    if (t.current) {
      double print = t.time_total_min > 0 ? t.time_total_min : t.current->print_min * t.speed;
      end = std::max(n, t.started_at + t.setup + print);
    }
    if (t.maintenance_pending) end = std::max(end, n) + cfg.maintenance_min;
    return end;
  }

  bool available(const PrinterTwin& t, double n) const {
    return (t.status == "idle" || t.status == "printing") && !t.maintenance_pending &&
           !t.anomaly && t.maintenance_until <= n;
  }

  void publish(PrinterTwin& t, bool force = false) {
    double n = now();
    double cend = current_end(t, n);
    double finish = cend;
    for (const auto& j : t.queued) finish += t.setup + j.print_min * t.speed;
    std::string msig = fmt::format("{}|{}|{:.3f}|{:.4f}|{:.3f}|{}|{}", t.status, available(t, n),
                                   cend, t.speed, t.setup, t.maintenance_pending,
                                   t.current ? t.current->id : "");
    // Called on every polled state: the records are built only when they changed.
    if (force || msig != t.last_machine_sig) {
      t.last_machine_sig = msig;
      write(fkeys::twin(t.name, "machine"),
            Json{{"status", t.status},
                 {"available", available(t, n)},
                 {"current_end", cend},
                 {"speed", t.speed},
                 {"setup", t.setup},
                 {"maintenance_pending", t.maintenance_pending},
                 {"maintenance_until", t.maintenance_until},
                 {"current", t.current ? Json(t.current->id) : Json(nullptr)},
                 {"sim_min", n}});
    }
    std::string qsig = fmt::format("{}|{:.3f}|{}", t.queue_version, finish, t.history.size());
    if (force || qsig != t.last_queue_sig) {
      t.last_queue_sig = qsig;
      Json ids = Json::array();
      for (const auto& j : t.queued) ids.push_back(j.id);
      Json hist = Json::array();
      for (const auto& h : t.history) hist.push_back(h);
      write(fkeys::twin(t.name, "queue"),
            Json{{"length", t.queued.size()},
                 {"finish_time", finish},
                 {"average_wait", t.waits ? t.wait_sum / t.waits : 0.0},
                 {"jobs", std::move(ids)},
                 {"current", t.current ? Json(t.current->id) : Json(nullptr)},
                 {"history", std::move(hist)},
                 {"sim_min", n}});
    }
  }

  void on_state(const data::RecordPtr& r) {
    PrinterTwin* t = twin_of(r);
    if (!t || !r->value.is_json()) return ++bad, void();
    const Json& s = r->value.json();
    t->status = s.value("status", "unknown");
    if (t->status == "maintenance" && t->maintenance_until < now()) t->maintenance_until = now();
    publish(*t);
  }

  void on_queue(const data::RecordPtr& r) {
    PrinterTwin* t = twin_of(r);
    if (!t || !r->value.is_json() || !r->value.json().contains("jobs")) return ++bad, void();
    t->queued.clear();
    for (const auto& j : r->value.json()["jobs"])
      if (auto s = job_from_json(j)) t->queued.push_back(*s);
    t->queue_version = r->value.json().value("version", t->queue_version + 1);
    publish(*t);
  }

  void on_event(const data::RecordPtr& r) {
    PrinterTwin* t = twin_of(r);
    if (!t || !r->value.is_json()) return ++bad, void();
    const Json& e = r->value.json();
    std::string ev = e.value("event", "");
    double at = e.value("sim_min", now());
    std::optional<JobSpec> job;
    if (e.contains("job")) job = job_from_json(e["job"]);
    if (ev == "queued" && job) {
      t->queued_at[job->id] = at;
    } else if (ev == "started" && job) {
      t->current = job;
      t->started_at = at;
      t->time_total_min = 0;
      if (auto it = t->queued_at.find(job->id); it != t->queued_at.end()) {
        t->wait_sum += at - it->second;
        ++t->waits;
        t->queued_at.erase(it);
      }
    } else if (ev == "printing" && job) {
      double total = e.value("time_total_s", 0.0) / 60.0;
      if (total > 0) {
        t->time_total_min = total;
        double sp = total / job->print_min;
        t->speed = (t->speed * t->speed_samples + sp) / (t->speed_samples + 1);
        ++t->speed_samples;
      }
    } else if (ev == "finished" || ev == "aborted" || ev == "failed") {
      if (job)
        t->history.push_back(Json{{"job", job->id}, {"started", t->started_at},
                                  {"finished", at}, {"result", ev}});
      while (t->history.size() > 20) t->history.pop_front();
    } else if (ev == "cleaned" && job) {
      // The whole overhead of a job that ran to the end: upload to cleared bed minus printing.
      if (t->current && t->current->id == job->id && t->time_total_min > 0 &&
          !t->history.empty() && t->history.back().value("result", "") == "finished") {
        double overhead = (at - t->started_at) - t->time_total_min;
        if (overhead > 0) {
          t->setup = (t->setup * t->setup_samples + overhead) / (t->setup_samples + 1);
          ++t->setup_samples;
        }
      }
      t->current.reset();
    } else if (ev == "maintenance_start") {
      t->maintenance_pending = false;
      t->maintenance_until = at + e.value("minutes", cfg.maintenance_min);
      t->current.reset();
      t->anomaly = false;
      t->over[0] = t->over[1] = 0;
      publish_anomaly(*t);
    } else if (ev == "maintenance_end") {
      t->maintenance_until = std::min(t->maintenance_until, now());
    }
    publish(*t);
  }

  void publish_anomaly(PrinterTwin& t) {
    write(fkeys::twin(t.name, "anomaly"),
          Json{{"anomaly", t.anomaly}, {"sensor", t.anomaly_sensor},
               {"residual", t.anomaly_residual}, {"sim_min", now()}});
  }

  void on_sensor(const data::RecordPtr& r) {
    PrinterTwin* t = twin_of(r);
    if (!t || !r->value.is_json()) return ++bad, void();
    const Json& s = r->value.json();
    int which = r->key.find("/sensors/bed") != std::string::npos ? 1 : 0;
    // Only the printing phase has steady targets (pre_print ramps up).
    if (s.value("job_state", "") != "printing" || t->anomaly || t->maintenance_pending) {
      t->over[which] = 0;
      return;
    }
    double residual = s.value("current", 0.0) - s.value("target", 0.0);
    if (std::fabs(residual) > cfg.anomaly_threshold_c) {
      if (++t->over[which] >= cfg.anomaly_samples) detect(*t, which ? "bed" : "hotend", residual);
    } else {
      t->over[which] = 0;
    }
  }

  // Anomaly twin -> fleet twin: stop the job, schedule maintenance, hand the job back.
  void detect(PrinterTwin& t, const char* sensor, double residual) {
    ++anomalies;
    t.anomaly = true;
    t.anomaly_sensor = sensor;
    t.anomaly_residual = residual;
    publish_anomaly(t);
    double n = now();
    t.maintenance_pending = true;
    ++maintenances;
    write(fkeys::command(t.name),
          Json{{"op", "maintenance"}, {"minutes", cfg.maintenance_min},
               {"reason", fmt::format("{} anomaly ({:+.1f} C)", sensor, residual)}},
          data::kNoWait);
    Json m{{"printer", t.name}, {"sensor", sensor}, {"residual", residual},
           {"minutes", cfg.maintenance_min}, {"sim_min", n}};
    if (t.current) m["job"] = to_json(*t.current);
    write(fkeys::maintenance(), m, data::kNoWait);
    // The machine twin says "unavailable" before the job comes back, so a scheduler that
    // reschedules it sees the printer as it is now.
    publish(t, true);
    if (t.current) {
      ++returned;
      write(fkeys::returned(),
            Json{{"job", to_json(*t.current)}, {"printer", t.name}, {"reason", "anomaly"},
                 {"sim_min", n}},
            data::kNoWait);
    }
    publish_fleet();
  }

  void publish_fleet() {
    double n = now();
    int online = 0, maint = 0, printing = 0;
    for (auto& [name, t] : twins) {
      if (t.status != "unreachable" && t.status != "unknown") ++online;
      if (t.maintenance_pending || t.maintenance_until > n) ++maint;
      if (t.current) ++printing;
    }
    write(fkeys::fleet_twin(),
          Json{{"printers", twins.size()}, {"online", online}, {"in_maintenance", maint},
               {"printing", printing}, {"anomalies", anomalies.load()}, {"sim_min", n}});
  }
};

Twins::Twins(std::unique_ptr<Impl> i) : impl_(std::move(i)) {}
Twins::~Twins() {
  impl_->subs.clear();
  impl_->wq.stop();
}

Expected<std::unique_ptr<Twins>, std::string> Twins::start(std::shared_ptr<data::Backends> b,
                                                           TwinConfig cfg,
                                                           std::shared_ptr<const SimClock> clock) {
  auto impl = std::make_unique<Impl>();
  impl->backends = b;
  impl->clock = std::move(clock);
  for (const auto& p : cfg.printers) {
    PrinterTwin t;
    t.name = p;
    t.speed = cfg.prior_speed;
    t.setup = cfg.prior_setup_min;
    impl->twins.emplace(p, std::move(t));
  }
  impl->cfg = std::move(cfg);
  impl->due = std::make_unique<data::Due>(b);
  auto r = impl->due->init(
      std::string(kTwinApp), data::kProducer | data::kConsumer,
      {{"fleet/*/state@fleetdriver", std::nullopt}, {"fleet/*/queue@fleetdriver", std::nullopt},
       {"fleet/*/events@fleetdriver", std::nullopt},
       {"fleet/*/sensors/*@fleetdriver", std::nullopt}},
      {{"fleet/**", std::nullopt, false}});
  if (!r) return unexpected("fleet twins: " + r.error());
  Impl* raw = impl.get();
  auto sub = [&](const std::string& pattern, void (Impl::*fn)(const data::RecordPtr&))
      -> Expected<void, std::string> {
    auto s = raw->due->observe(
        pattern, [raw, fn](const data::RecordPtr& rec) { (raw->*fn)(rec); }, raw->wq.executor());
    if (!s) return unexpected(s.error());
    raw->subs.push_back(std::move(*s));
    return {};
  };
  for (auto [pattern, fn] : std::initializer_list<std::pair<const char*, void (Impl::*)(const data::RecordPtr&)>>{
           {"fleet/*/state@fleetdriver", &Impl::on_state},
           {"fleet/*/queue@fleetdriver", &Impl::on_queue},
           {"fleet/*/events@fleetdriver", &Impl::on_event},
           {"fleet/*/sensors/*@fleetdriver", &Impl::on_sensor}}) {
    if (auto s = sub(pattern, fn); !s) return unexpected("fleet twins: " + s.error());
  }
  raw->wq.post([raw] {
    for (auto& [n, t] : raw->twins) raw->publish(t, true);
    raw->publish_fleet();
  });
  return std::unique_ptr<Twins>(new Twins(std::move(impl)));
}

TwinStats Twins::stats() const {
  return TwinStats{impl_->anomalies, impl_->maintenances, impl_->returned, impl_->bad};
}

}  // namespace sdn::fleet
