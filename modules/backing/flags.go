package backing

import (
	"flag"

	"github.com/adkit/adk/modules/contract"
)

// The environment variables FromEnv reads, the ones `make demo` passes on.
const (
	EnvRedisDSN    = "ADK_REDIS_DSN"
	EnvPostgresDSN = "ADK_POSTGRES_DSN"
	EnvSQLitePath  = "ADK_SQLITE_PATH"
)

// RegisterFlags defines the flags every command of the kit uses to pick
// a backing — --redis, --postgres, --redis-namespace, --redis-volatile,
// --redis-assume-durable and the PostgreSQL table names — writing into c.
// Call [Config.FillFromEnv] after parsing, so that a flag overrides the
// environment.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar((*string)(&c.RedisDSN), "redis", "", "Redis URL (default $"+EnvRedisDSN+"); selects the Redis backing. Prefer the variable: a flag shows in the process list")
	fs.StringVar((*string)(&c.PostgresDSN), "postgres", "", "PostgreSQL DSN (default $"+EnvPostgresDSN+"); selects the PostgreSQL backing. Prefer the variable: a flag shows in the process list")
	fs.StringVar(&c.SQLitePath, "sqlite", "", "SQLite file path (default $"+EnvSQLitePath+"); selects the SQLite backing, creating the file and its schema when missing")
	fs.StringVar(&c.RedisNamespace, "redis-namespace", "", `Redis key namespace (default "adk")`)
	fs.BoolVar(&c.RedisCluster, "redis-cluster", false, "Redis: the DSN names a Redis Cluster (redis://host:port?addr=host2:port&addr=host3:port); opens a cluster client")
	fs.IntVar(&c.RedisShards, "redis-shards", 0, "Redis: the deployment's shards per queue (Settings.Shards; 0 or 1 for none)")
	fs.BoolVar(&c.RedisVolatile, "redis-volatile", false, "Redis: the deployment runs without persistence on purpose (Settings.Volatile); preflight accepts it")
	fs.BoolVar(&c.RedisAssumeDurable, "redis-assume-durable", false, "Redis: CONFIG is hidden (managed Redis) and the provider guarantees persistence (Settings.AssumeDurable)")
	fs.StringVar(&c.Tables.Runs, "runs-table", "", "PostgreSQL runs table (default adk_runs)")
	fs.StringVar(&c.Tables.Work, "work-table", "", "PostgreSQL work table (default adk_work)")
	fs.StringVar(&c.Tables.Turns, "turns-table", "", "PostgreSQL tenant rotation table (default adk_queue_turns)")
	fs.StringVar(&c.Tables.Blobs, "blobs-table", "", "PostgreSQL claim-check blob table (default adk_blobs)")
	fs.IntVar(&c.Runs.KeepVersions, "keep-versions", 0, "run versions the deployment keeps (Settings.Runs.KeepVersions); a store shows none past it")
	fs.DurationVar(&c.Runs.VersionAge, "version-age", 0, "how long the deployment keeps run versions (Settings.Runs.VersionAge), e.g. 168h")
	fs.BoolVar(&c.Runs.RequireFence, "require-fence", false, "the deployment refuses unfenced run writes (Settings.Runs.RequireFence)")
}

// FillFromEnv reads the DSNs from ADK_REDIS_DSN and ADK_POSTGRES_DSN,
// and the SQLite path from ADK_SQLITE_PATH, unless a flag already chose a
// backing: --redis overrides an exported ADK_POSTGRES_DSN as well as
// ADK_REDIS_DSN, so naming a backing on the command line is always
// enough.
func (c *Config) FillFromEnv(getenv func(string) string) {
	if c.RedisDSN.IsSet() || c.PostgresDSN.IsSet() || c.SQLitePath != "" {
		return
	}
	c.RedisDSN = contract.Secret(getenv(EnvRedisDSN))
	c.PostgresDSN = contract.Secret(getenv(EnvPostgresDSN))
	c.SQLitePath = getenv(EnvSQLitePath)
}

// FromEnv is the Config `make demo` runs with: the DSNs from the
// environment, every other field zero.
func FromEnv(getenv func(string) string) Config {
	var c Config
	c.FillFromEnv(getenv)
	return c
}
