// Replays every file of the given corpus directories (or files) through a libFuzzer entry
// point, so committed crash regressions run under ctest in ordinary builds.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

static int run_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::vector<uint8_t> buf((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  LLVMFuzzerTestOneInput(buf.data(), buf.size());
  return 1;
}

int main(int argc, char** argv) {
  int n = 0;
  for (int i = 1; i < argc; ++i) {
    std::filesystem::path p(argv[i]);
    if (std::filesystem::is_directory(p)) {
      for (const auto& e : std::filesystem::recursive_directory_iterator(p))
        if (e.is_regular_file()) n += run_file(e.path());
    } else if (std::filesystem::exists(p)) {
      n += run_file(p);
    }
  }
  std::printf("replayed %d inputs\n", n);
  return n > 0 ? 0 : 1;  // an empty corpus is a setup error, not a pass
}
