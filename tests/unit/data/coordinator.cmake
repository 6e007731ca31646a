# Coordinator: the pure core (manual clock, needs only keys) and the runner on real DUEs with the
# in-process bus and an SQLite archive.
sdnator_unit_test(coordinator_core_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/coordinator_core_test.cpp
  LIBS sdnator_data)
sdnator_unit_test(coordinator_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/coordinator_test.cpp
  LIBS sdnator_data)
