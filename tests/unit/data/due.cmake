sdnator_unit_test(data_due_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/inproc_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/due_test.cpp ${CMAKE_CURRENT_LIST_DIR}/config_test.cpp LIBS sdnator_data)
