// /proc sampling of the controller under test (see procstat.hpp).
#include "tools/ofbench/procstat.hpp"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>

namespace sdn::ofbench {

namespace {

std::optional<std::string> read_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  return line;
}

}  // namespace

std::optional<ProcTimes> parse_stat_line(const std::string& line) {
  // proc(5): "pid (comm) state ppid ... utime(14) stime(15)"; comm ends at the LAST ')'.
  const auto open = line.find('(');
  const auto close = line.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return std::nullopt;
  ProcTimes t;
  t.comm = line.substr(open + 1, close - open - 1);
  std::istringstream rest(line.substr(close + 1));
  std::string field;
  // After ")": field 3 (state) is the first; utime is field 14, stime 15.
  for (int i = 3; i <= 15; ++i) {
    if (!(rest >> field)) return std::nullopt;
    if (i == 14 || i == 15) {
      char* end = nullptr;
      const unsigned long long v = std::strtoull(field.c_str(), &end, 10);
      if (end == field.c_str() || *end != '\0') return std::nullopt;
      (i == 14 ? t.utime_ticks : t.stime_ticks) = v;
    }
  }
  return t;
}

std::optional<ProcSnapshot> read_proc(int pid) {
  const std::string base = "/proc/" + std::to_string(pid);
  ProcSnapshot s;
  s.at = std::chrono::steady_clock::now();
  auto stat = read_line(base + "/stat");
  if (!stat) return std::nullopt;
  auto total = parse_stat_line(*stat);
  if (!total) return std::nullopt;
  s.total = *total;
  std::ifstream status(base + "/status");
  std::string line;
  while (std::getline(status, line)) {
    auto value = [&](const char* key) -> std::optional<uint64_t> {
      const size_t n = std::char_traits<char>::length(key);
      if (line.compare(0, n, key) != 0) return std::nullopt;
      return std::strtoull(line.c_str() + n, nullptr, 10);
    };
    if (auto v = value("VmRSS:")) s.rss_kib = *v;
  }
  if (DIR* d = opendir((base + "/task").c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
      const int tid = std::atoi(e->d_name);
      const std::string tbase = base + "/task/" + e->d_name;
      if (auto l = read_line(tbase + "/stat"))
        if (auto t = parse_stat_line(*l)) s.threads[tid] = *t;
      std::ifstream ts(tbase + "/status");
      while (std::getline(ts, line)) {
        if (line.rfind("voluntary_ctxt_switches:", 0) == 0) s.voluntary_ctxt += std::strtoull(line.c_str() + 24, nullptr, 10);
        if (line.rfind("nonvoluntary_ctxt_switches:", 0) == 0)
          s.nonvoluntary_ctxt += std::strtoull(line.c_str() + 27, nullptr, 10);
      }
    }
    closedir(d);
  }
  return s;
}

ResourceSampler::ResourceSampler(int pid, std::chrono::milliseconds interval) : pid_(pid), interval_(interval) {}

ResourceSampler::~ResourceSampler() { stop(); }

void ResourceSampler::start() {
  first_ = read_proc(pid_);
  if (!first_) gone_ = true;
  thread_ = std::thread([this] { run(); });
}

void ResourceSampler::stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void ResourceSampler::run() {
  const double hz = static_cast<double>(sysconf(_SC_CLK_TCK));
  std::optional<ProcSnapshot> prev = first_;
  while (prev) {
    const auto wake = prev->at + interval_;
    while (!stop_ && std::chrono::steady_clock::now() < wake) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    // On stop, one last sample covers the tail (a short run still gets one).
    if (stop_ && std::chrono::steady_clock::now() - prev->at < std::chrono::milliseconds(100)) break;
    auto cur = read_proc(pid_);
    if (!cur) {
      gone_ = true;
      break;
    }
    const double dt = std::chrono::duration<double>(cur->at - prev->at).count();
    ResourceSample r;
    r.t_s = std::chrono::duration<double>(cur->at - first_->at).count();
    auto pct = [&](const ProcTimes& a, const ProcTimes& b) {
      const double ticks = static_cast<double>((a.utime_ticks + a.stime_ticks) - (b.utime_ticks + b.stime_ticks));
      return dt > 0 ? 100.0 * ticks / hz / dt : 0.0;
    };
    r.cpu_pct = pct(cur->total, prev->total);
    r.rss_kib = cur->rss_kib;
    r.voluntary_ctxt = cur->voluntary_ctxt;
    r.nonvoluntary_ctxt = cur->nonvoluntary_ctxt;
    for (const auto& [tid, t] : cur->threads) {
      auto p = prev->threads.find(tid);
      r.threads[std::to_string(tid) + ":" + t.comm] = p == prev->threads.end() ? 0.0 : pct(t, p->second);
    }
    {
      std::lock_guard lock(mu_);
      samples_.push_back(std::move(r));
    }
    prev = std::move(cur);
    if (stop_) break;
  }
}

nlohmann::json ResourceSampler::to_json() const {
  std::lock_guard lock(mu_);
  nlohmann::json j;
  j["pid"] = pid_;
  j["samples"] = nlohmann::json::array();
  double sum = 0, max = 0;
  uint64_t rss_max = 0;
  for (const auto& s : samples_) {
    j["samples"].push_back({{"t_s", s.t_s},
                            {"cpu_pct", s.cpu_pct},
                            {"rss_kib", s.rss_kib},
                            {"voluntary_ctxt", s.voluntary_ctxt},
                            {"nonvoluntary_ctxt", s.nonvoluntary_ctxt},
                            {"threads", s.threads}});
    sum += s.cpu_pct;
    max = std::max(max, s.cpu_pct);
    rss_max = std::max(rss_max, s.rss_kib);
  }
  const size_t n = samples_.size();
  j["cpu_pct_mean"] = n ? sum / static_cast<double>(n) : 0.0;
  j["cpu_pct_max"] = max;
  j["rss_kib_max"] = rss_max;
  j["rss_kib_last"] = n ? samples_.back().rss_kib : (first_ ? first_->rss_kib : 0);
  const auto ctxt = [](const auto& s) { return s.voluntary_ctxt + s.nonvoluntary_ctxt; };
  j["ctxt_switches"] = n && first_ ? ctxt(samples_.back()) - std::min(ctxt(samples_.back()), ctxt(*first_)) : 0;
  j["process_gone"] = gone_.load();
  return j;
}

}  // namespace sdn::ofbench
