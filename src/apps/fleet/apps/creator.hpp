// The Job Creator: releases production orders (regular and urgent PPE) at scripted simulated
// times on fleet/orders. An order is one part printed `quantity` times; the script comes from a
// scenario generator (seeded) or is given explicitly.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "apps/fleet/apps/common.hpp"
#include "apps/fleet/assets/sim_clock.hpp"
#include "data/due.hpp"

namespace sdn::fleet {

struct Order {
  std::string id;       // "o7", "ppe1"
  double at_min = 0;    // release time (sim minutes)
  double print_min = 0; // per copy (slicer estimate)
  int quantity = 1;
  bool urgent = false;
  std::vector<JobSpec> jobs() const;
  Json to_json() const;
};

struct ScenarioConfig {
  std::size_t printers = 5;
  double jobs_per_printer = 8;      // regular copies per printer, on average
  int max_quantity = 12;            // regular orders: quantity uniform in [1, max_quantity]
  double release_window_min = 60;   // regular orders released uniformly over [0, window]
  bool ppe = false;                 // add an urgent PPE order
  double ppe_at_min = 480;
  double ppe_print_min = 90;        // a face-shield frame
  double ppe_per_printer = 3;       // PPE copies per printer, in all
  int ppe_batch = 6;                // copies per PPE order
  uint64_t seed = 1;
};
// Regular orders with print times from the triangular (48, 240, 600) minute distribution,
// deterministic for a seed; plus the PPE order when asked. Sorted by release time.
std::vector<Order> make_orders(const ScenarioConfig& cfg);
double triangular(double lo, double mode, double hi, double u);  // inverse CDF at u in [0,1)

class JobCreator {
 public:
  static Expected<std::unique_ptr<JobCreator>, std::string> start(
      std::shared_ptr<data::Backends> b, std::vector<Order> orders,
      std::shared_ptr<const SimClock> clock);
  ~JobCreator();
  std::size_t released() const;

 private:
  struct Impl;
  explicit JobCreator(std::unique_ptr<Impl> i);
  std::unique_ptr<Impl> impl_;
};

}  // namespace sdn::fleet
