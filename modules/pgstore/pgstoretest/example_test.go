package pgstoretest_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/pgstore"
	"github.com/adkit/adk/modules/pgstore/pgstoretest"
)

// testQueueInASchemaOfItsOwn is a test of a pgstore queue on the shared
// server of ADK_TEST_POSTGRES_DSN, in a throwaway schema holding
// pgstore's tables: other tests' items are not in it, and it is dropped
// when the test ends.
func testQueueInASchemaOfItsOwn(t *testing.T) {
	ctx := context.Background()
	schema := pgstoretest.TestSchema(t, pgstoretest.DSN(t), nil)
	pool := schema.Pool(t, func(c *pgxpool.Config) { c.MaxConns = 4 })
	q, err := pgstore.NewQueue(pool, nil, pgstore.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "run-1"}); err != nil {
		t.Fatal(err)
	}
	ls, err := q.Claim(ctx, contract.ClaimRequest{LeaseFor: time.Minute, Max: 10})
	if err != nil || len(ls) != 1 {
		t.Fatalf("claim: %v, %v; want the one item of this schema", ls, err)
	}
}

// A test in a throwaway schema: the whole file shows the test.
func Example() {
	_ = testQueueInASchemaOfItsOwn
}
