# DUE and the Coordinator over a real Redis, each "process" with its own Backends.
sdnator_unit_test(data_due_redis_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/due_redis_test.cpp
  LIBS sdnator_fake_redis sdnator_data)
