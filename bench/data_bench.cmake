# Data-layer benchmark (seed 002 section 5): end-to-end latency, throughput, archive batching and
# scalability, DUE over Redis side by side with raw hiredis in the same run. A plain program, not
# a Google Benchmark: it drives producer/consumer threads and prints its own tables and JSON
# (docs/data-bench.md has the figures and how to run it).
find_package(PkgConfig REQUIRED)
pkg_check_modules(DATA_BENCH_HIREDIS REQUIRED IMPORTED_TARGET hiredis)
pkg_check_modules(DATA_BENCH_LIBPQ REQUIRED IMPORTED_TARGET libpq)

add_executable(data_bench ${CMAKE_CURRENT_LIST_DIR}/data_bench.cpp)
target_link_libraries(data_bench PRIVATE sdnator_data CLI11::CLI11 PkgConfig::DATA_BENCH_HIREDIS
  PkgConfig::DATA_BENCH_LIBPQ Threads::Threads)
