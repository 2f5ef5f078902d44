// Package integration holds the kit's cross-module tests: the fault suite
// and its oracle, the bad-input table run against every backing, and a
// fuzz target for the dashboard's dead-letter filter.
//
// The fault suite starts its own redis-server and PostgreSQL on loopback
// ports, runs workers as separate processes (the test binary started again
// with ADK_ORACLE_WORKER set), breaks the servers, the workers or the
// network mid-load, and checks that every item was done exactly once or
// dead-lettered and that every run's counters equal the patches that
// landed. The bad-input table uses the shared servers of the integration
// lane, ADK_TEST_REDIS_URL and ADK_TEST_POSTGRES_DSN, or containers when
// they are unset and Docker answers ([RedisURL], [PostgresDSN]).
//
// Tests that need a server carry the integration build tag; docs/reliability.md
// says what each one shows.
package integration
