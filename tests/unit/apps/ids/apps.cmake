# The ids apps: batch codec, detector logic, the sampler's on-demand production through the real
# bus and Coordinator (capturing on loopback), and [sampler]/[ids]/[mitigation] config errors.
sdnator_unit_test(ids_apps_tests
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/apps_test.cpp
  LIBS sdnator_app_ids sdnator_app_mitigation sdnator_data sdnator_pkt sdnator_core)
