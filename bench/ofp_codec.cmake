# OpenFlow codec micro-benchmarks (docs/ofp.md has the figures and how to run them).
sdnator_bench(ofp_codec_bench SOURCES ${CMAKE_CURRENT_LIST_DIR}/ofp_codec_bench.cpp LIBS sdnator_ofp)
