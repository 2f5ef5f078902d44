package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/pgstore"
)

// Behind PgBouncer in transaction mode: the pool goes through PgBouncer
// with an exec mode that keeps no prepared statement on the server, the
// listener straight to PostgreSQL, and the settings travel with the role
// (ALTER ROLE app SET statement_timeout = '30s', then RECONNECT in
// PgBouncer's admin console). A configuration PgBouncer cannot serve is
// refused at Open with a *pgstore.PoolerError that names the fix.
func Example_pgBouncer() {
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(os.Getenv("ADK_PGBOUNCER_DSN")) // e.g. postgres://app@pgbouncer:6432/app
	if err != nil {
		log.Fatal(err)
	}
	cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeExec // or default_query_exec_mode=exec in the DSN
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()

	// LISTEN needs a session of its own: straight to PostgreSQL.
	direct := contract.Secret(os.Getenv("ADK_POSTGRES_DSN"))
	listener, err := pgstore.Listen(ctx, direct, pgstore.ListenerSettings{}, pgstore.NotifyChannel(pgstore.StateTables{}))
	if err != nil {
		log.Fatal(err) // pointed at PgBouncer, a *pgstore.ListenerProbeError
	}
	defer listener.Close()

	queue, err := pgstore.OpenQueue(ctx, pool, contract.SystemClock{}, pgstore.Settings{Listener: listener})
	var pe *pgstore.PoolerError
	if errors.As(err, &pe) {
		log.Fatalf("%s = %s: %s", pe.Setting, pe.Value, pe.Fix)
	}
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("claims wake on", queue.Channel())
}
