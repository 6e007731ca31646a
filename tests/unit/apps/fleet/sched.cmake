# The fleet scheduling algorithms, the ILP checked against brute force (src/apps/fleet/sched).
sdnator_unit_test(fleet_sched_tests SOURCES ${CMAKE_CURRENT_LIST_DIR}/sched_test.cpp LIBS sdnator_fleet_sched)
