# Archive faults (issue 11): the disk spool, PostgreSQL unreachable behind a relay the test cuts
# (needs SDNATOR_PG_DSN, skipped without it unless SDNATOR_REQUIRE_SERVICES=1), SQLite on a full
# tmpfs (needs root to mount it; skipped otherwise).
find_package(PkgConfig REQUIRED)
pkg_check_modules(ARCHIVE_FAULTS_LIBPQ REQUIRED IMPORTED_TARGET libpq)
sdnator_unit_test(archive_faults_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/archive_faults_test.cpp
  LIBS sdnator_data PkgConfig::ARCHIVE_FAULTS_LIBPQ)
