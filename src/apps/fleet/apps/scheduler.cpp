// Job Scheduler (scheduler.hpp). Callbacks run on the scheduler's work queue.
#include "apps/fleet/apps/scheduler.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <mutex>
#include <random>
#include <set>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/log.hpp"

namespace sdn::fleet {

std::string_view to_string(Algorithm a) {
  switch (a) {
    case Algorithm::kDecentralized: return "decentralized";
    case Algorithm::kBaseline: return "baseline";
    case Algorithm::kFcfs: return "fcfs";
    case Algorithm::kDynamic: return "dynamic";
  }
  return "?";
}

std::optional<Algorithm> algorithm_from(std::string_view s) {
  for (auto a : {Algorithm::kDecentralized, Algorithm::kBaseline, Algorithm::kFcfs,
                 Algorithm::kDynamic})
    if (to_string(a) == s) return a;
  return std::nullopt;
}

namespace {

// What the scheduler knows about one printer.
struct View {
  std::string name;
  // from the twins (fcfs, dynamic)
  bool twin_seen = false, available = true;
  double current_end = 0, finish = 0, setup = 20, speed = 1;
  int queue_len = 0;
  std::set<std::string> known;  // job ids the queue twin has listed (queued, current, history)
  std::vector<JobSpec> outstanding;  // placed by us, not yet listed by the twin
  // from the driver's state (decentralized)
  bool idle_empty = false, claim_pending = false;
};

}  // namespace

struct Scheduler::Impl {
  SchedulerConfig cfg;
  std::shared_ptr<const SimClock> clock;
  std::unique_ptr<data::Due> due;
  std::vector<View> views;
  std::map<std::string, std::size_t> index;
  std::deque<Json> held;            // orders that arrived before the fleet was known
  std::deque<std::vector<JobSpec>> board;  // decentralized: unclaimed orders
  std::size_t rr_cursor = 0;
  std::mt19937_64 rng;
  // dynamic: the reconfigurable queue. Jobs stay here (planned per printer) until a printer's
  // driver queue is empty; every new batch, returned job or changed estimate re-plans all of
  // them on the solver thread, so dispatch never waits for CBC.
  std::vector<std::deque<JobSpec>> plan;
  std::map<std::string, JobSpec> uncommitted;
  bool solving = false, replan_wanted = false, solving_urgent = false;
  static constexpr double kLeadMin = 10;  // commit a printer's next job this long before it is free
  const char* replan_trigger = "orders";
  WorkQueue solver;
  std::vector<data::Due::Subscription> subs;
  mutable std::mutex stats_mu;
  SchedulerStats st;
  WorkQueue wq;

  double now() const { return clock->now_min(); }

  void write(const std::string& key, Json v, unsigned flags = 0) {
    auto r = due->write(key, std::move(v), flags);
    if (!r) SDN_LOG_RATELIMITED(spdlog::level::warn, "job scheduler: write {}: {}", key, r.error());
  }

  View* view_of(const data::RecordPtr& r) {
    auto it = index.find(std::string(fkeys::printer_of(r->key)));
    return it == index.end() ? nullptr : &views[it->second];
  }

  void bad() {
    std::lock_guard l(stats_mu);
    ++st.bad_records;
  }

  void on_printers(const data::RecordPtr& r) {
    if (!r->value.is_json() || !r->value.json().contains("printers")) return bad();
    if (!views.empty()) return;  // the fleet is fixed for a run
    for (const auto& p : r->value.json()["printers"]) {
      if (!p.is_object() || !p.contains("name") || !p["name"].is_string()) return bad();
      View v;
      v.name = p["name"].get<std::string>();
      index[v.name] = views.size();
      views.push_back(std::move(v));
    }
    plan.resize(views.size());
    while (!held.empty()) {
      Json o = std::move(held.front());
      held.pop_front();
      handle_orders(o);
    }
  }

  void on_orders(const data::RecordPtr& r) {
    if (!r->value.is_json() || !r->value.json().contains("orders")) return bad();
    if (views.empty()) {
      held.push_back(r->value.json());
      return;
    }
    handle_orders(r->value.json());
  }

  void handle_orders(const Json& rec) {
    std::vector<JobSpec> jobs;
    for (const auto& o : rec["orders"]) {
      std::vector<JobSpec> order_jobs;
      if (!o.is_object() || !o.contains("jobs")) return bad();
      for (const auto& j : o["jobs"]) {
        auto s = job_from_json(j);
        if (!s) return bad();
        order_jobs.push_back(*s);
      }
      if (cfg.algorithm == Algorithm::kDecentralized) {
        // Urgent orders go ahead of the unclaimed regular ones on the board.
        bool urgent = !order_jobs.empty() && order_jobs.front().urgent;
        if (urgent) {
          auto it = std::find_if(board.begin(), board.end(),
                                 [](const auto& b) { return b.empty() || !b.front().urgent; });
          board.insert(it, std::move(order_jobs));
        } else {
          board.push_back(std::move(order_jobs));
        }
      } else {
        jobs.insert(jobs.end(), order_jobs.begin(), order_jobs.end());
      }
    }
    if (cfg.algorithm == Algorithm::kDecentralized)
      claim();
    else if (!jobs.empty())
      decide(jobs, "orders");
  }

  void on_returned(const data::RecordPtr& r) {
    if (!r->value.is_json() || !r->value.json().contains("job")) return bad();
    auto job = job_from_json(r->value.json()["job"]);
    std::string from = r->value.json().value("printer", "");
    if (!job) return bad();
    {
      std::lock_guard l(stats_mu);
      ++st.returned;
    }
    if (cfg.algorithm == Algorithm::kDecentralized) {
      // No global view: the job is printed again on the printer that had it.
      auto it = index.find(from);
      if (it == index.end()) return bad();
      send(it->second, {*job}, true);
      count_decision(1);
      write(fkeys::decisions(),
            Json{{"algorithm", "decentralized"}, {"trigger", "returned"}, {"sim_min", now()},
                 {"printer", from}, {"jobs", Json::array({job->id})}},
            data::kNoWait);
      return;
    }
    decide({*job}, "returned");
  }

  // Driver state of one printer (decentralized reads only its own printer's).
  void on_state(const data::RecordPtr& r) {
    View* v = view_of(r);
    if (!v || !r->value.is_json()) return bad();
    const Json& s = r->value.json();
    bool idle = s.value("status", "") == "idle" && s.contains("job") && s["job"].is_null() &&
                s.value("queue_length", 1) == 0 && !s.value("maintenance_pending", false);
    if (!idle) v->claim_pending = false;
    v->idle_empty = idle;
    if (idle && !v->claim_pending && !board.empty()) claim();
  }

  void claim() {
    std::vector<std::size_t> idle;
    for (std::size_t i = 0; i < views.size(); ++i)
      if (views[i].idle_empty && !views[i].claim_pending) idle.push_back(i);
    std::shuffle(idle.begin(), idle.end(), rng);
    for (std::size_t i : idle) {
      if (board.empty()) return;
      std::vector<JobSpec> order = std::move(board.front());
      board.pop_front();
      views[i].claim_pending = true;
      count_decision(order.size());
      Json ids = Json::array();
      for (const auto& j : order) ids.push_back(j.id);
      write(fkeys::decisions(),
            Json{{"algorithm", "decentralized"}, {"trigger", "claim"}, {"sim_min", now()},
                 {"printer", views[i].name}, {"order", order.empty() ? "" : order.front().order},
                 {"jobs", std::move(ids)}},
            data::kNoWait);
      send(i, order, false);
    }
  }

  void on_machine(const data::RecordPtr& r) {
    View* v = view_of(r);
    if (!v || !r->value.is_json()) return bad();
    const Json& m = r->value.json();
    bool was_available = v->available;
    double old_speed = v->speed, old_setup = v->setup;
    v->twin_seen = true;
    v->available = m.value("available", true);
    v->current_end = m.value("current_end", now());
    v->setup = m.value("setup", v->setup);
    v->speed = m.value("speed", v->speed);
    if (m.contains("current") && m["current"].is_string()) see(*v, m["current"].get<std::string>());
    if (cfg.algorithm != Algorithm::kDynamic) return;
    bool changed = was_available != v->available || std::abs(old_speed - v->speed) > 0.01 * old_speed ||
                   std::abs(old_setup - v->setup) > 0.1 * old_setup;
    if (changed && !uncommitted.empty()) replan("estimates");
    dispatch(static_cast<std::size_t>(v - views.data()));
  }

  void on_queue(const data::RecordPtr& r) {
    View* v = view_of(r);
    if (!v || !r->value.is_json()) return bad();
    const Json& q = r->value.json();
    v->finish = q.value("finish_time", now());
    v->queue_len = q.value("length", 0);
    for (const auto& id : q.value("jobs", Json::array()))
      if (id.is_string()) see(*v, id.get<std::string>());
    if (q.contains("current") && q["current"].is_string()) see(*v, q["current"].get<std::string>());
    for (const auto& h : q.value("history", Json::array()))
      if (h.is_object() && h.contains("job") && h["job"].is_string()) see(*v, h["job"].get<std::string>());
    if (cfg.algorithm == Algorithm::kDynamic) dispatch(static_cast<std::size_t>(v - views.data()));
  }

  // Solves for every uncommitted job on the solver thread; the answer becomes the plan for the
  // jobs still uncommitted when it comes back. One solve at a time; requests meanwhile coalesce.
  void replan(const char* trigger) {
    replan_trigger = trigger;
    if (solving) {
      replan_wanted = true;
      return;
    }
    if (uncommitted.empty()) return;
    solving = true;
    replan_wanted = false;
    solving_urgent = std::any_of(uncommitted.begin(), uncommitted.end(),
                                 [](const auto& kv) { return kv.second.urgent; });
    std::vector<sched::Machine> ms = machines();
    std::vector<sched::Job> js;
    std::vector<JobSpec> specs;
    for (const auto& [id, j] : uncommitted) {
      js.push_back(sched::Job{j.id, j.order, j.print_min, j.urgent});
      specs.push_back(j);
    }
    std::string trig = trigger;
    solver.post([this, ms = std::move(ms), js = std::move(js), specs = std::move(specs), trig]() {
      sched::Decision d = sched::dynamic(ms, js, cfg.ilp);
      wq.post([this, d = std::move(d), ms, specs, trig]() { apply(d, ms, specs, trig); });
    });
  }

  void apply(const sched::Decision& d, const std::vector<sched::Machine>& ms,
             const std::vector<JobSpec>& specs, const std::string& trigger) {
    solving = false;
    solving_urgent = false;
    std::map<std::string, std::size_t> where;
    std::map<std::string, bool> front;
    for (const auto& p : d.placements) {
      where[p.job] = p.machine;
      front[p.job] = p.front;
    }
    // Jobs that arrived during the solve keep their old slot until the next solve.
    std::vector<std::deque<JobSpec>> next(views.size());
    for (std::size_t i = 0; i < plan.size(); ++i)
      for (const auto& j : plan[i])
        if (uncommitted.count(j.id) && !where.count(j.id)) next[i].push_back(j);
    std::vector<JobSpec> unplaced;
    for (const auto& j : specs) {
      if (!uncommitted.count(j.id)) continue;  // dispatched meanwhile
      auto it = where.find(j.id);
      if (it == where.end() || it->second >= views.size()) {
        unplaced.push_back(j);
        continue;
      }
      auto& q = next[it->second];
      if (front[j.id]) {
        auto pos = std::find_if(q.begin(), q.end(), [](const JobSpec& x) { return !x.urgent; });
        q.insert(pos, j);
      } else {
        q.push_back(j);
      }
    }
    for (const auto& j : unplaced)
      if (auto it = std::find_if(plan.begin(), plan.end(), [&](const auto& q) {
            return std::any_of(q.begin(), q.end(), [&](const JobSpec& x) { return x.id == j.id; });
          });
          it != plan.end())
        next[static_cast<std::size_t>(it - plan.begin())].push_back(j);
      else
        replan_wanted = true;  // nowhere to go (no printer available): try again later
    plan = std::move(next);
    record(d, ms, trigger.c_str(), specs.size());
    for (std::size_t i = 0; i < views.size(); ++i) dispatch(i);
    if (replan_wanted) replan(replan_trigger);
  }

  // dynamic: commit the next jobs as printers come within the lead time of being free.
  void tick() {
    for (std::size_t i = 0; i < views.size(); ++i) dispatch(i);
    wq.post_after(clock->real_for(1.0), [this] { tick(); });
  }

  // Just in time: a printer gets its next job once its driver queue is empty and its current
  // job is within kLeadMin of its expected end, so at most one job beyond the running one is
  // ever committed and a new plan still finds the rest here. Urgent jobs come first, and the
  // first printer to come free takes one even if the plan put it elsewhere: a plan made on
  // estimates that have since moved never holds a PPE part behind a long print.
  void dispatch(std::size_t i) {
    if (i >= views.size()) return;
    View& v = views[i];
    if (!v.available || v.queue_len + static_cast<int>(v.outstanding.size()) > 0) return;
    if (v.twin_seen && v.current_end > now() + kLeadMin) return;
    std::deque<JobSpec>* from = nullptr;
    if (!plan[i].empty() && plan[i].front().urgent) {
      from = &plan[i];
    } else {
      // Steal an urgent job from the printer expected to be free the latest.
      double latest = -1;
      for (std::size_t k = 0; k < views.size(); ++k) {
        if (k == i || plan[k].empty() || !plan[k].front().urgent) continue;
        double free_at = std::max(views[k].current_end, views[k].finish);
        if (free_at > latest) {
          latest = free_at;
          from = &plan[k];
        }
      }
    }
    if (!from) {
      if (plan[i].empty() || solving_urgent) return;  // regular jobs wait while PPE is planned
      from = &plan[i];
    }
    JobSpec j = from->front();
    from->pop_front();
    uncommitted.erase(j.id);
    send(i, {j}, false);
  }

  void count_decision(std::size_t jobs) {
    std::lock_guard l(stats_mu);
    ++st.decisions;
    st.jobs_placed += jobs;
  }

  static void see(View& v, const std::string& id) {
    v.known.insert(id);
    std::erase_if(v.outstanding, [&](const JobSpec& j) { return j.id == id; });
  }

  std::vector<sched::Machine> machines() const {
    double n = now();
    std::vector<sched::Machine> out;
    for (const auto& v : views) {
      sched::Machine m;
      m.name = v.name;
      m.available = v.available;
      m.setup = v.setup;
      m.speed = v.speed;
      m.current_end = std::max(n, v.twin_seen ? v.current_end : n);
      m.busy = m.current_end > n;
      m.busy = m.current_end > n;
      double ready = std::max(m.current_end, v.twin_seen ? v.finish : n);
      for (const auto& j : v.outstanding) ready += v.setup + j.print_min * v.speed;
      m.ready_at = ready;
      m.queue_len = v.queue_len + static_cast<int>(v.outstanding.size());
      out.push_back(std::move(m));
    }
    return out;
  }

  void decide(const std::vector<JobSpec>& jobs, const char* trigger) {
    if (cfg.algorithm == Algorithm::kDynamic) {
      for (const auto& j : jobs) uncommitted[j.id] = j;
      replan(trigger);
      return;
    }
    std::vector<sched::Machine> ms = machines();
    std::vector<sched::Job> js;
    for (const auto& j : jobs) js.push_back(sched::Job{j.id, j.order, j.print_min, j.urgent});
    sched::Decision d;
    switch (cfg.algorithm) {
      case Algorithm::kBaseline: d = sched::baseline(ms, js, &rr_cursor); break;
      case Algorithm::kFcfs: d = sched::fcfs(ms, js); break;
      case Algorithm::kDynamic: d = sched::dynamic(ms, js, cfg.ilp); break;
      case Algorithm::kDecentralized: return;
    }
    // Only the dynamic scheduler has a reconfigurable queue; the others append (FIFO).
    if (cfg.algorithm != Algorithm::kDynamic)
      for (auto& p : d.placements) p.front = false;
    std::map<std::string, const JobSpec*> by_id;
    for (const auto& j : jobs) by_id[j.id] = &j;
    std::map<std::pair<std::size_t, bool>, std::vector<JobSpec>> per;
    for (const auto& p : d.placements) {
      auto it = by_id.find(p.job);
      if (it == by_id.end() || p.machine >= views.size()) continue;
      per[{p.machine, p.front}].push_back(*it->second);
    }
    for (auto& [k, list] : per) send(k.first, list, k.second);
    if (d.placements.size() != jobs.size())
      spdlog::warn("job scheduler: {} of {} jobs placed ({})", d.placements.size(), jobs.size(),
                   d.note);
    record(d, ms, trigger, jobs.size());
  }

  // Counts a centralized decision and archives it on fleet/decisions.
  void record(const sched::Decision& d, const std::vector<sched::Machine>& ms, const char* trigger,
              std::size_t jobs) {
    count_decision(d.placements.size());
    {
      std::lock_guard l(stats_mu);
      st.solve_ms_sum += d.solve_ms;
      st.solve_ms_max = std::max(st.solve_ms_max, d.solve_ms);
      if (d.fell_back) ++st.ilp_fallbacks;
      if (d.optimal) ++st.ilp_optimal;
    }
    Json rec = d.to_json();
    rec["trigger"] = trigger;
    rec["sim_min"] = now();
    rec["jobs"] = jobs;
    Json names = Json::array();
    for (const auto& m : ms) names.push_back(m.name);
    rec["machines"] = std::move(names);
    write(fkeys::decisions(), std::move(rec), data::kNoWait);
  }

  void send(std::size_t machine, const std::vector<JobSpec>& jobs, bool front) {
    View& v = views[machine];
    Json list = Json::array();
    for (const auto& j : jobs) {
      list.push_back(to_json(j));
      if (!v.known.count(j.id)) v.outstanding.push_back(j);
    }
    write(fkeys::command(v.name), Json{{"op", "enqueue"}, {"front", front}, {"jobs", std::move(list)}},
          data::kNoWait);
  }
};

Scheduler::Scheduler(std::unique_ptr<Impl> i) : impl_(std::move(i)) {}
Scheduler::~Scheduler() {
  impl_->subs.clear();
  impl_->solver.stop();
  impl_->wq.stop();
}

SchedulerStats Scheduler::stats() const {
  std::lock_guard l(impl_->stats_mu);
  return impl_->st;
}

Expected<std::unique_ptr<Scheduler>, std::string> Scheduler::start(
    std::shared_ptr<data::Backends> b, SchedulerConfig cfg, std::shared_ptr<const SimClock> clock) {
  auto impl = std::make_unique<Impl>();
  impl->cfg = cfg;
  impl->clock = std::move(clock);
  impl->rng.seed(cfg.seed * 104729 + 3);
  impl->due = std::make_unique<data::Due>(b);
  using H = void (Impl::*)(const data::RecordPtr&);
  std::vector<std::pair<std::string, H>> wants{
      {"fleet/printers@fleetdriver", &Impl::on_printers},
      {"fleet/orders@jobcreator", &Impl::on_orders},
      {"fleet/jobs/returned@fleettwin", &Impl::on_returned}};
  switch (cfg.algorithm) {
    case Algorithm::kDecentralized:
      wants.emplace_back("fleet/*/state@fleetdriver", &Impl::on_state);
      break;
    case Algorithm::kBaseline: break;
    case Algorithm::kFcfs:
    case Algorithm::kDynamic:
      wants.emplace_back("fleet/*/twin/machine@fleettwin", &Impl::on_machine);
      wants.emplace_back("fleet/*/twin/queue@fleettwin", &Impl::on_queue);
      break;
  }
  std::vector<data::Interest> interests;
  for (const auto& [k, h] : wants) interests.push_back({k, std::nullopt});
  auto r = impl->due->init(std::string(kSchedulerApp), data::kProducer | data::kConsumer,
                           interests,
                           {{"fleet/decisions", std::nullopt, false},
                            {"fleet/*/command", std::nullopt, false}});
  if (!r) return unexpected("job scheduler: " + r.error());
  Impl* raw = impl.get();
  if (cfg.algorithm == Algorithm::kDynamic) raw->wq.post([raw] { raw->tick(); });
  for (const auto& [k, h] : wants) {
    auto s = raw->due->observe(
        k, [raw, h = h](const data::RecordPtr& rec) { (raw->*h)(rec); }, raw->wq.executor());
    if (!s) return unexpected("job scheduler: " + s.error());
    raw->subs.push_back(std::move(*s));
  }
  return std::unique_ptr<Scheduler>(new Scheduler(std::move(impl)));
}

}  // namespace sdn::fleet
