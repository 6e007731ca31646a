# The fleet apps through the real bus and archive, against the emulated printers.
sdnator_unit_test(fleet_apps_tests
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/apps_test.cpp
  LIBS sdnator_fleet)
