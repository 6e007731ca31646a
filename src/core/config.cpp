// TOML configuration with typed, range-checked getters and unknown-key detection.
#include "core/config.hpp"

#include <fmt/format.h>

namespace sdn::core {

Expected<Config, std::string> Config::parse(std::string_view text, std::string_view source) {
  Config c;
  c.source_ = std::string(source);
  try {
    c.root_ = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    const auto& b = e.source().begin;
    return unexpected(fmt::format("{}:{}:{}: {}", source, b.line, b.column, e.description()));
  }
  return c;
}

Expected<Config, std::string> Config::load_file(const std::string& path) {
  try {
    Config c;
    c.source_ = path;
    c.root_ = toml::parse_file(path);
    return c;
  } catch (const toml::parse_error& e) {
    const auto& b = e.source().begin;
    return unexpected(fmt::format("{}:{}:{}: {}", path, b.line, b.column, e.description()));
  }
}

const toml::node* Config::node(std::string_view section, std::string_view key) {
  known_sections_.emplace(section);
  known_keys_.emplace(fmt::format("{}.{}", section, key));
  const toml::table* sec = root_[section].as_table();
  if (!sec) return nullptr;
  return sec->get(key);
}

bool Config::has(std::string_view section, std::string_view key) const {
  const toml::table* sec = root_[section].as_table();
  return sec && sec->get(key);
}

int64_t Config::get_int(std::string_view section, std::string_view key, int64_t def, int64_t min, int64_t max) {
  const toml::node* n = node(section, key);
  if (!n) return def;
  auto v = n->value<int64_t>();
  if (!n->is_integer() || !v) {
    problems_.push_back(fmt::format("{}.{}: expected an integer", section, key));
    return def;
  }
  if (*v < min || *v > max) {
    problems_.push_back(fmt::format("{}.{}: {} is out of range [{}, {}]", section, key, *v, min, max));
    return def;
  }
  return *v;
}

double Config::get_double(std::string_view section, std::string_view key, double def, double min, double max) {
  const toml::node* n = node(section, key);
  if (!n) return def;
  auto v = n->value<double>();  // integers convert too
  if (!v) {
    problems_.push_back(fmt::format("{}.{}: expected a number", section, key));
    return def;
  }
  if (*v < min || *v > max) {
    problems_.push_back(fmt::format("{}.{}: {} is out of range [{}, {}]", section, key, *v, min, max));
    return def;
  }
  return *v;
}

bool Config::get_bool(std::string_view section, std::string_view key, bool def) {
  const toml::node* n = node(section, key);
  if (!n) return def;
  if (!n->is_boolean()) {
    problems_.push_back(fmt::format("{}.{}: expected true or false", section, key));
    return def;
  }
  return *n->value<bool>();
}

std::string Config::get_string(std::string_view section, std::string_view key, std::string def) {
  const toml::node* n = node(section, key);
  if (!n) return def;
  if (!n->is_string()) {
    problems_.push_back(fmt::format("{}.{}: expected a string", section, key));
    return def;
  }
  return *n->value<std::string>();
}

std::vector<std::string> Config::get_string_list(std::string_view section, std::string_view key,
                                                 std::vector<std::string> def) {
  const toml::node* n = node(section, key);
  if (!n) return def;
  const toml::array* arr = n->as_array();
  if (!arr) {
    problems_.push_back(fmt::format("{}.{}: expected an array of strings", section, key));
    return def;
  }
  std::vector<std::string> out;
  for (const auto& e : *arr) {
    if (!e.is_string()) {
      problems_.push_back(fmt::format("{}.{}: expected an array of strings", section, key));
      return def;
    }
    out.push_back(*e.value<std::string>());
  }
  return out;
}

std::vector<double> Config::get_double_list(std::string_view section, std::string_view key, std::vector<double> def,
                                            double min, double max) {
  const toml::node* n = node(section, key);
  if (!n) return def;
  const toml::array* arr = n->as_array();
  const auto bad = [&] {
    problems_.push_back(fmt::format("{}.{}: expected a non-empty array of numbers in [{}, {}]", section, key, min, max));
    return def;
  };
  if (!arr || arr->empty()) return bad();
  std::vector<double> out;
  for (const auto& e : *arr) {
    std::optional<double> v;
    if (e.is_floating_point()) v = *e.value<double>();
    else if (e.is_integer()) v = static_cast<double>(*e.value<int64_t>());
    if (!v || !(*v >= min && *v <= max)) return bad();
    out.push_back(*v);
  }
  return out;
}

std::vector<std::string> Config::finish() const {
  std::vector<std::string> out = problems_;
  for (const auto& [k, v] : root_) {
    const std::string sec(k.str());
    if (!known_sections_.contains(sec)) {
      out.push_back(fmt::format("{}: unknown section [{}]", source_, sec));
      continue;
    }
    if (const toml::table* t = v.as_table()) {
      for (const auto& [k2, v2] : *t) {
        (void)v2;
        std::string full = fmt::format("{}.{}", sec, k2.str());
        if (!known_keys_.contains(full)) out.push_back(fmt::format("{}: unknown key {}", source_, full));
      }
    } else {
      out.push_back(fmt::format("{}: {} must be a [section]", source_, sec));
    }
  }
  return out;
}

}  // namespace sdn::core
