sdnator_unit_test(data_key_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/key_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/wire_test.cpp LIBS sdnator_data)
