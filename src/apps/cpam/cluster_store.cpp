// The cluster layer as CPAM's shared store (cluster_state.hpp), and the CpamService constructor
// that takes a cluster: built only when sdnator_cluster is (src/apps/cpam/CMakeLists.txt).
#include "apps/cpam/cluster_state.hpp"
#include "apps/cpam/cpam.hpp"
#include "cluster/cluster.hpp"

namespace sdn::apps::cpam {

namespace shared {
namespace {
class ClusterStore final : public Store {
 public:
  explicit ClusterStore(std::shared_ptr<cluster::Cluster> c) : c_(std::move(c)) {}
  void lead(const std::string& role, std::function<void(uint64_t)> gained, std::function<void()> lost) override {
    c_->lead(role, cluster::LeaderEvents{std::move(gained), std::move(lost)});
  }
  bool fenced_set(const std::string& role, const std::string& key, const std::string& value) override {
    return c_->fenced_set(role, key, value);
  }
  std::optional<std::string> get(const std::string& key) override { return c_->get(key); }
  bool set(const std::string& key, const std::string& value, std::chrono::milliseconds ttl) override {
    return c_->set(key, value, ttl);
  }
  std::string instance_id() const override { return c_->instance_id(); }

 private:
  std::shared_ptr<cluster::Cluster> c_;
};
}  // namespace

std::shared_ptr<Store> make_cluster_store(std::shared_ptr<cluster::Cluster> c) {
  return std::make_shared<ClusterStore>(std::move(c));
}
}  // namespace shared

CpamService::CpamService(CpamConfig cfg, std::shared_ptr<data::Due> due, core::Metrics* metrics,
                         std::shared_ptr<cluster::Cluster> cluster)
    : CpamService(std::move(cfg), std::move(due), metrics,
                  cluster ? shared::make_cluster_store(std::move(cluster)) : std::shared_ptr<shared::Store>{}) {}

}  // namespace sdn::apps::cpam
