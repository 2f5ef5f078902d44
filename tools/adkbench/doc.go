// Command adkbench runs one workload against adk's queue backings
// (memstore, redisstore, pgstore with LISTEN and poll-only) and against
// River and Asynq on the same servers, with the same worker count and a
// no-op handler, and prints the figures side by side with their ratios.
//
// Scenarios: throughput (enqueue, then claim→complete), idle (one busy
// tenant beside 49 idle ones), busy50 (fifty busy tenants), fairness (the
// claim index of small tenants' first items behind a big one), wake
// (enqueue return → handler start at a steady arrival rate), depth (claim
// latency at 1,000 vs 1,000,000 queued), burndown (River's published
// benchmark: a million items queued, then drained by 2,000 workers),
// runner (contract/runner beside the harness's own worker pool, a
// diagnostic), cluster (a self-started 3-master Redis Cluster: one shard
// against three, throughput and fairness, with each server's CPU time)
// and physical (redis-benchmark EVAL and pgbench -N as the
// machine's references). Every row of our backings but runner's reference
// runs contract/runner, the loop users run.
//
//	ADK_TEST_REDIS_URL=redis://127.0.0.1:6379/0 \
//	ADK_TEST_POSTGRES_DSN='postgres://postgres@127.0.0.1:5432/test?sslmode=disable' \
//	go run ./tools/adkbench -items 20000
//
// It is a benchmark only; no library imports it.
package main
