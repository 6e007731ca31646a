# Per-app access control: grants, DUE checks on the in-process bus, revocation (acl_test), and the
# same over real Redis ACL users (acl_redis_test, a private redis-server the test starts).
sdnator_unit_test(data_acl_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/acl_test.cpp
  LIBS sdnator_data)
find_program(SDNATOR_REDIS_SERVER redis-server)
if(SDNATOR_REDIS_SERVER)
  find_package(PkgConfig REQUIRED)
  if(NOT TARGET PkgConfig::HIREDIS_TEST)
    pkg_check_modules(HIREDIS_TEST REQUIRED IMPORTED_TARGET hiredis)
  endif()
  sdnator_unit_test(data_acl_redis_test
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/acl_redis_test.cpp
    LIBS sdnator_fake_redis sdnator_data PkgConfig::HIREDIS_TEST)
endif()
