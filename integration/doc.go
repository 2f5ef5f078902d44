// Package integration holds the kit's cross-module tests: the fault suite
// and its oracle, and the bad-input table run against every backing. They
// need real servers and carry the integration build tag; the servers come
// from ADK_TEST_REDIS_URL and ADK_TEST_POSTGRES_DSN.
package integration
