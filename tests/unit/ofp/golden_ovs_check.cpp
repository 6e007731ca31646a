// Cross-checks every golden with Open vSwitch's independent decoder: `ovs-ofctl ofp-print`
// must decode it without error, as the OpenFlow type the golden claims to be. Registered as a
// ctest only when ovs-ofctl is installed; the unit tests never depend on it.
#include <cstdio>
#include <string>

#include "unit/ofp/goldens.hpp"

int main(int argc, char** argv) {
  const std::string ofctl = argc > 1 ? argv[1] : "ovs-ofctl";
  int failures = 0;
  for (const auto& g : sdn::ofp::test::kGoldens) {
    const std::string cmd = ofctl + " ofp-print " + std::string(g.hex) + " 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    if (p == nullptr) return 2;
    std::string out;
    char buf[512];
    while (fgets(buf, sizeof buf, p) != nullptr) out += buf;
    const int rc = pclose(p);
    const bool ok = rc == 0 && out.find("decode error") == std::string::npos &&
                    out.find("(OF1.3)") != std::string::npos && out.find("WARN") == std::string::npos;
    std::printf("%-24s %s\n", std::string(g.name).c_str(), ok ? "ok" : "FAILED");
    if (!ok) {
      std::printf("%s\n", out.c_str());
      ++failures;
    }
  }
  return failures == 0 ? 0 : 1;
}
