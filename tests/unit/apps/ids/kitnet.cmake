sdnator_unit_test(kitnet_tests SOURCES ${CMAKE_CURRENT_LIST_DIR}/kitnet_test.cpp LIBS sdnator_kitnet)
