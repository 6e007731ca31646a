# The DUE apps of the ids case study: packet sampler and detector (README.md).
add_library(sdnator_app_ids STATIC
  ${CMAKE_CURRENT_LIST_DIR}/config.cpp
  ${CMAKE_CURRENT_LIST_DIR}/traffic.cpp
  ${CMAKE_CURRENT_LIST_DIR}/sampler.cpp
  ${CMAKE_CURRENT_LIST_DIR}/detector.cpp
)
target_include_directories(sdnator_app_ids PUBLIC ${PROJECT_SOURCE_DIR}/src)
target_link_libraries(sdnator_app_ids PUBLIC sdnator_kitnet sdnator_data sdnator_pkt sdnator_core fmt::fmt spdlog::spdlog
                      nlohmann_json::nlohmann_json)
