// Job Creator (creator.hpp): orders released from the creator's work queue at their sim times;
// orders due at the same minute go out as one record, so the scheduler decides them together.
#include "apps/fleet/apps/creator.hpp"

#include <algorithm>
#include <cmath>
#include <random>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace sdn::fleet {

std::vector<JobSpec> Order::jobs() const {
  std::vector<JobSpec> out;
  for (int i = 1; i <= quantity; ++i)
    out.push_back(JobSpec{fmt::format("{}-{}", id, i), id, print_min, urgent, at_min});
  return out;
}

Json Order::to_json() const {
  Json jobs_j = Json::array();
  for (const auto& j : jobs()) jobs_j.push_back(fleet::to_json(j));
  return Json{{"order", id}, {"at_min", at_min}, {"print_min", print_min},
              {"quantity", quantity}, {"urgent", urgent}, {"jobs", std::move(jobs_j)}};
}

double triangular(double lo, double mode, double hi, double u) {
  double f = (mode - lo) / (hi - lo);
  if (u < f) return lo + std::sqrt(u * (hi - lo) * (mode - lo));
  return hi - std::sqrt((1 - u) * (hi - lo) * (hi - mode));
}

std::vector<Order> make_orders(const ScenarioConfig& cfg) {
  std::mt19937_64 rng(cfg.seed * 7919 + 17);
  std::uniform_real_distribution<double> u01(0.0, 1.0);
  std::uniform_int_distribution<int> qty(1, std::max(1, cfg.max_quantity));
  std::vector<Order> orders;
  double want = cfg.jobs_per_printer * static_cast<double>(cfg.printers);
  int copies = 0;
  for (int n = 1; copies < want; ++n) {
    Order o;
    o.id = fmt::format("o{}", n);
    o.quantity = std::min(qty(rng), static_cast<int>(std::ceil(want)) - copies);
    o.print_min = std::round(triangular(48, 240, 600, u01(rng)));
    o.at_min = std::round(u01(rng) * cfg.release_window_min);
    copies += o.quantity;
    orders.push_back(o);
  }
  if (cfg.ppe) {
    // The urgent request arrives as production orders of ppe_batch copies each (a hospital's
    // batch), all at once.
    int total = std::max(1, static_cast<int>(std::lround(cfg.ppe_per_printer *
                                                         static_cast<double>(cfg.printers))));
    int batch = std::max(1, cfg.ppe_batch);
    for (int n = 1; total > 0; ++n) {
      Order p;
      p.id = fmt::format("ppe{}", n);
      p.urgent = true;
      p.quantity = std::min(batch, total);
      p.print_min = cfg.ppe_print_min;
      p.at_min = cfg.ppe_at_min;
      total -= p.quantity;
      orders.push_back(p);
    }
  }
  std::stable_sort(orders.begin(), orders.end(),
                   [](const Order& a, const Order& b) { return a.at_min < b.at_min; });
  return orders;
}

struct JobCreator::Impl {
  std::unique_ptr<data::Due> due;
  std::shared_ptr<const SimClock> clock;
  std::vector<Order> orders;
  std::size_t next = 0;
  std::atomic<std::size_t> released{0};
  WorkQueue wq;

  void tick() {
    double n = clock->now_min();
    Json batch = Json::array();
    while (next < orders.size() && orders[next].at_min <= n) batch.push_back(orders[next++].to_json());
    if (!batch.empty()) {
      released += batch.size();
      auto r = due->write(fkeys::orders(), Json{{"orders", std::move(batch)}, {"sim_min", n}},
                          data::kNoWait);
      if (!r) spdlog::error("job creator: {}", r.error());
    }
    if (next < orders.size())
      wq.post_after(clock->real_for(std::max(0.0, orders[next].at_min - clock->now_min())),
                    [this] { tick(); });
  }
};

JobCreator::JobCreator(std::unique_ptr<Impl> i) : impl_(std::move(i)) {}
JobCreator::~JobCreator() { impl_->wq.stop(); }
std::size_t JobCreator::released() const { return impl_->released; }

Expected<std::unique_ptr<JobCreator>, std::string> JobCreator::start(
    std::shared_ptr<data::Backends> b, std::vector<Order> orders,
    std::shared_ptr<const SimClock> clock) {
  for (const auto& o : orders)
    if (o.quantity < 1 || !(o.print_min > 0) || o.at_min < 0 || o.id.empty())
      return unexpected(fmt::format("job creator: bad order '{}'", o.id));
  auto impl = std::make_unique<Impl>();
  impl->clock = std::move(clock);
  impl->orders = std::move(orders);
  std::stable_sort(impl->orders.begin(), impl->orders.end(),
                   [](const Order& x, const Order& y) { return x.at_min < y.at_min; });
  impl->due = std::make_unique<data::Due>(b);
  auto r = impl->due->init(std::string(kCreatorApp), data::kProducer, {},
                           {{"fleet/orders", std::nullopt, false}});
  if (!r) return unexpected("job creator: " + r.error());
  Impl* raw = impl.get();
  raw->wq.post([raw] { raw->tick(); });
  return std::unique_ptr<JobCreator>(new JobCreator(std::move(impl)));
}

}  // namespace sdn::fleet
