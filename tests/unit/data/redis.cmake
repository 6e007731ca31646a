# Redis backend of Data Updates, tested against a private redis-server that the tests start,
# kill and restart themselves (tests/fakes/redis_server). Skipped when redis-server is missing.
find_program(SDNATOR_REDIS_SERVER redis-server)
if(SDNATOR_REDIS_SERVER)
  find_package(PkgConfig REQUIRED)
  pkg_check_modules(HIREDIS_TEST REQUIRED IMPORTED_TARGET hiredis)
  sdnator_unit_test(redis_updates_test
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/redis_updates_test.cpp
    LIBS sdnator_fake_redis sdnator_data PkgConfig::HIREDIS_TEST)
else()
  message(STATUS "redis-server not found: redis_updates_test not built")
endif()
