# Data Archives (SQLite and PostgreSQL): one query suite run on both backends. The PostgreSQL
# cases need SDNATOR_PG_DSN (scripts/services.sh); they skip without it unless
# SDNATOR_REQUIRE_SERVICES=1. The tests talk to PostgreSQL directly too (to drop their tables,
# kill connections), hence libpq here.
find_package(PkgConfig REQUIRED)
pkg_check_modules(ARCHIVE_TEST_LIBPQ REQUIRED IMPORTED_TARGET libpq)
sdnator_unit_test(archive_tests
  SOURCES archive_test.cpp
  LIBS sdnator_data PkgConfig::ARCHIVE_TEST_LIBPQ)
