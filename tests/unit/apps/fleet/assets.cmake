# Machine Assets (emulated Ultimaker 3 fleet): pure model tests plus the Jedi contract over loopback.
sdnator_unit_test(fleet_assets_tests
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/assets_test.cpp
  LIBS sdnator_fleet_assets sdnator_core)
