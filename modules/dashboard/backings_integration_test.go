//go:build integration

package dashboard

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/pgstore"
	"github.com/adkit/adk/modules/pgstore/pgstoretest"
	"github.com/adkit/adk/modules/redisstore"
	"github.com/adkit/adk/modules/redisstore/redistest"
)

// The page and security checks of the unit lane, on the real backings.
var backingChecks = []struct {
	name  string
	token string
	check func(*testing.T, *fixture)
}{
	{"overview", "", checkOverviewPage},
	{"tenants", "", checkTenantsPage},
	{"leases", "", checkLeasesPage},
	{"dead", "", checkDeadPage},
	{"item", "", checkItemPage},
	{"run-versions", "", checkRunVersions},
	{"healthz-metrics", "", checkHealthzMetricsStatic},
	{"read-only", "", checkReadOnlyRefusesActions},
	{"token-and-csrf", testToken, checkActionsNeedTokenAndCSRF},
	{"bulk-filter", testToken, checkBulkActionStaysInsideFilter},
	{"xss", testToken, checkXSSRendersAsText},
	{"dsn", testToken, checkDSNNeverRendered},
	{"bad-cursors", "", checkBadCursorsAre400},
	{"bidi", "", checkBidiControlsAreVisible},
	{"dead-newest-first", "", checkDeadNewestFirstPaging},
	{"dead-counts", "", checkDeadCountsHonourFilters},
	{"dead-confirm", testToken, checkBulkConfirmShowsTheCount},
	{"dead-selection", testToken, checkSelectionActsOnPickedOnly},
	{"dead-errors", testToken, checkDeadErrorGroups},
}

func TestPagesOnRedis(t *testing.T) {
	client := redistest.Client(t)
	for _, c := range backingChecks {
		t.Run(c.name, func(t *testing.T) {
			ns := redistest.Namespace(t, client)
			clock := contracttest.NewFakeClock(time.Time{})
			settings := redisstore.Settings{Namespace: ns, Policy: fixturePolicy, Runs: versionsPolicy}
			q, err := redisstore.NewQueue(client, clock, settings)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = q.Close() })
			st, err := redisstore.NewState(client, clock, settings)
			if err != nil {
				t.Fatal(err)
			}
			c.check(t, newFixtureOn(t, c.token, clock, "redis", q, q, st))
		})
	}
}

// TestHistoryPagesOnRedis: the history pages over Redis's own history.
func TestHistoryPagesOnRedis(t *testing.T) {
	client := redistest.Client(t)
	ns := redistest.Namespace(t, client)
	clock := contracttest.NewFakeClock(time.Time{})
	settings := redisstore.Settings{Namespace: ns, Policy: fixturePolicy}
	q, err := redisstore.NewQueue(client, clock, settings)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Close() })
	st, err := redisstore.NewState(client, clock, settings)
	if err != nil {
		t.Fatal(err)
	}
	checkHistoryPages(t, newFixtureOn(t, testToken, clock, "redis", q, q, st))
}

func TestPagesOnPostgres(t *testing.T) {
	dsn := pgstoretest.DSN(t)
	for _, c := range backingChecks {
		t.Run(c.name, func(t *testing.T) {
			pool := postgresSchema(t, dsn)
			clock := contracttest.NewFakeClock(time.Time{})
			settings := pgstore.Settings{Policy: fixturePolicy, Runs: versionsPolicy}
			q, err := pgstore.NewQueue(pool, clock, settings)
			if err != nil {
				t.Fatal(err)
			}
			st, err := pgstore.NewState(pool, clock, settings)
			if err != nil {
				t.Fatal(err)
			}
			c.check(t, newFixtureOn(t, c.token, clock, "postgresql", q, q, st))
		})
	}
}

// TestHistoryPagesOnPostgres: the history pages over PostgreSQL's own
// history.
func TestHistoryPagesOnPostgres(t *testing.T) {
	pool := postgresSchema(t, pgstoretest.DSN(t))
	clock := contracttest.NewFakeClock(time.Time{})
	settings := pgstore.Settings{Policy: fixturePolicy}
	q, err := pgstore.NewQueue(pool, clock, settings)
	if err != nil {
		t.Fatal(err)
	}
	st, err := pgstore.NewState(pool, clock, settings)
	if err != nil {
		t.Fatal(err)
	}
	checkHistoryPages(t, newFixtureOn(t, testToken, clock, "postgresql", q, q, st))
}

// postgresSchema gives the test a schema of its own, with the expected
// tables applied, dropped when the test ends.
func postgresSchema(t *testing.T, dsn string) *pgxpool.Pool {
	t.Helper()
	return pgstoretest.TestSchema(t, dsn, nil).Pool(t, func(c *pgxpool.Config) { c.MaxConns = 4 })
}
