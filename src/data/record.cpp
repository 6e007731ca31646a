// Value helpers (record.hpp).
#include "data/record.hpp"

namespace sdn::data {

std::size_t Value::approx_size() const {
  if (is_bytes()) return bytes().size();
  return json().dump().size();
}

}  // namespace sdn::data
