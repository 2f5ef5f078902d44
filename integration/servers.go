package integration

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/testcontainers/testcontainers-go"
	tcpostgres "github.com/testcontainers/testcontainers-go/modules/postgres"
	tcredis "github.com/testcontainers/testcontainers-go/modules/redis"
)

// Environment variables naming the servers of the integration lane.
const (
	RedisEnv    = "ADK_TEST_REDIS_URL"
	PostgresEnv = "ADK_TEST_POSTGRES_DSN"
)

// Where a server comes from.
type source int

const (
	fromEnv source = iota + 1
	fromContainer
)

// errNoServer is what a laptop without the variable and without Docker
// gets: one line saying what to do.
type errNoServer struct{ env, what string }

func (e errNoServer) Error() string {
	return fmt.Sprintf("no %s for the integration lane: set %s (e.g. %s) or start a Docker engine so testcontainers can run one",
		e.what, e.env, example(e.env))
}

func example(env string) string {
	if env == RedisEnv {
		return "redis://127.0.0.1:6379/0"
	}
	return "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
}

// choose decides where a server comes from: the variable when set, else a
// container when a Docker engine answers, else an error naming the variable.
func choose(envValue string, dockerReachable func() bool, env, what string) (source, error) {
	switch {
	case envValue != "":
		return fromEnv, nil
	case dockerReachable():
		return fromContainer, nil
	}
	return 0, errNoServer{env: env, what: what}
}

// dockerReachable reports whether a Docker engine answers within a few
// seconds.
func dockerReachable() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	p, err := testcontainers.NewDockerProvider()
	if err != nil {
		return false
	}
	defer p.Close()
	return p.Health(ctx) == nil
}

// RedisURL returns the Redis server of the integration lane, starting a
// container (removed when the test ends) when ADK_TEST_REDIS_URL is unset
// and Docker is reachable. Without either the test fails with one line.
func RedisURL(t testing.TB) string {
	t.Helper()
	v := os.Getenv(RedisEnv)
	src, err := choose(v, dockerReachable, RedisEnv, "Redis")
	if err != nil {
		t.Fatal(err)
	}
	if src == fromEnv {
		return v
	}
	ctx := context.Background()
	c, err := tcredis.Run(ctx, "redis:7")
	testcontainers.CleanupContainer(t, c)
	if err != nil {
		t.Fatalf("starting a Redis container: %v", err)
	}
	url, err := c.ConnectionString(ctx)
	if err != nil {
		t.Fatalf("Redis container address: %v", err)
	}
	return url
}

// PostgresDSN is RedisURL's counterpart for PostgreSQL
// (ADK_TEST_POSTGRES_DSN).
func PostgresDSN(t testing.TB) string {
	t.Helper()
	v := os.Getenv(PostgresEnv)
	src, err := choose(v, dockerReachable, PostgresEnv, "PostgreSQL")
	if err != nil {
		t.Fatal(err)
	}
	if src == fromEnv {
		return v
	}
	ctx := context.Background()
	c, err := tcpostgres.Run(ctx, "postgres:15",
		tcpostgres.WithDatabase("test"), tcpostgres.WithPassword("postgres"), tcpostgres.BasicWaitStrategies())
	testcontainers.CleanupContainer(t, c)
	if err != nil {
		t.Fatalf("starting a PostgreSQL container: %v", err)
	}
	dsn, err := c.ConnectionString(ctx, "sslmode=disable")
	if err != nil {
		t.Fatalf("PostgreSQL container address: %v", err)
	}
	return dsn
}
