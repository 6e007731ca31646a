# DUE over a private redis-server that the test kills (SIGKILL) and restarts (issue 11 faults).
sdnator_unit_test(data_redis_restart_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/redis_restart_test.cpp
  LIBS sdnator_fake_redis sdnator_data)
