// Configuration file access (TOML). Each layer reads its own section through typed getters
// with defaults and ranges; every key asked for is remembered, so after all layers have
// read, finish() reports unknown keys (typos) and bad values by their dotted path instead
// of silently ignoring them.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <toml++/toml.h>

#include "core/expected.hpp"

namespace sdn::core {

class Config {
 public:
  Config() = default;  // empty: every getter returns its default
  static Expected<Config, std::string> parse(std::string_view text, std::string_view source = "config");
  static Expected<Config, std::string> load_file(const std::string& path);

  int64_t get_int(std::string_view section, std::string_view key, int64_t def,
                  int64_t min = INT64_MIN, int64_t max = INT64_MAX);
  double get_double(std::string_view section, std::string_view key, double def,
                    double min = -1e300, double max = 1e300);
  bool get_bool(std::string_view section, std::string_view key, bool def);
  std::string get_string(std::string_view section, std::string_view key, std::string def);
  std::vector<std::string> get_string_list(std::string_view section, std::string_view key,
                                           std::vector<std::string> def);
  // A non-empty array of numbers, each in [min, max] (integers accepted).
  std::vector<double> get_double_list(std::string_view section, std::string_view key, std::vector<double> def,
                                      double min = -1e300, double max = 1e300);
  // Whether the file sets that key (command-line flags override only what the file left unset).
  bool has(std::string_view section, std::string_view key) const;

  // Records a problem found by a layer's own validation ("section.key: why").
  void add_problem(std::string problem) { problems_.push_back(std::move(problem)); }

  // All problems: values of the wrong type or out of range, unknown sections and keys.
  std::vector<std::string> finish() const;

 private:
  const toml::node* node(std::string_view section, std::string_view key);
  toml::table root_;
  std::string source_;
  std::set<std::string, std::less<>> known_sections_;
  std::set<std::string, std::less<>> known_keys_;
  std::vector<std::string> problems_;
};

}  // namespace sdn::core
