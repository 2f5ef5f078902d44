package sqlitestore_test

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/sqlitestore"
)

// A run and the work it enqueues commit together, or neither does.
func TestBoundCommitsOrRollsBackTogether(t *testing.T) {
	ctx := t.Context()
	db := newFile(t, sqlitestore.Settings{})
	clock := contracttest.NewFakeClock(time.Unix(1_700_000_000, 0))
	runs, err := sqlitestore.NewState(db, clock, sqlitestore.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	work, err := sqlitestore.NewQueue(db, clock, sqlitestore.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	for _, commit := range []bool{false, true} {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := runs.Bound(tx).PutRun(ctx, contract.Run{Tenant: "acme", ID: "r1"}); err != nil {
			t.Fatal(err)
		}
		if err := work.Bound(tx).Enqueue(ctx, contract.Item{Tenant: "acme", ID: "r1"}); err != nil {
			t.Fatal(err)
		}
		if commit {
			err = tx.Commit()
		} else {
			err = tx.Rollback()
		}
		if err != nil {
			t.Fatal(err)
		}
		_, runErr := runs.GetRun(ctx, "acme", "r1")
		_, itemErr := work.Item(ctx, contract.ItemKey{Tenant: "acme", ID: "r1"})
		if commit && (runErr != nil || itemErr != nil) {
			t.Fatalf("after commit: run %v, item %v; want both", runErr, itemErr)
		}
		if !commit && (!errors.Is(runErr, contract.ErrNotFound) || !errors.Is(itemErr, contract.ErrNotFound)) {
			t.Fatalf("after rollback: run %v, item %v; want neither", runErr, itemErr)
		}
	}
}

// A bound queue refuses the calls that issue tokens: SQLite forgets a
// rolled-back transaction, its token counter included.
func TestBoundRefusesTokenIssuingCalls(t *testing.T) {
	ctx := t.Context()
	db := newFile(t, sqlitestore.Settings{})
	work, err := sqlitestore.NewQueue(db, nil, sqlitestore.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	b := work.Bound(tx)
	req := contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 1}
	_, err = b.Claim(ctx, req)
	if _, ok := errors.AsType[*contract.ValidationError](err); !ok {
		t.Fatalf("bound Claim: %v, want a *contract.ValidationError", err)
	}
	_, err = b.CompleteAndClaim(ctx, nil, req)
	if _, ok := errors.AsType[*contract.ValidationError](err); !ok {
		t.Fatalf("bound CompleteAndClaim: %v, want a *contract.ValidationError", err)
	}
	_, err = b.Heartbeat(ctx, contract.Lease{Item: contract.Item{Tenant: "acme", ID: "x"}, Token: 1}, time.Minute)
	if _, ok := errors.AsType[*contract.ValidationError](err); !ok {
		t.Fatalf("bound Heartbeat: %v, want a *contract.ValidationError", err)
	}
}

// Tokens keep increasing across a close and reopen of the file: the
// counter is in the file, committed with each claim.
func TestTokensIncreaseAcrossReopen(t *testing.T) {
	ctx := t.Context()
	path := t.TempDir() + "/adk.db"
	var last int64
	for round := range 3 {
		db, err := sqlitestore.OpenDB(path, sqlitestore.Settings{})
		if err != nil {
			t.Fatal(err)
		}
		q, err := sqlitestore.OpenQueue(ctx, db, nil, sqlitestore.Settings{})
		if err != nil {
			t.Fatal(err)
		}
		if err := q.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "x"}); err != nil {
			t.Fatal(err)
		}
		ls, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 1})
		if err != nil {
			t.Fatal(err)
		}
		if ls[0].Token <= last {
			t.Fatalf("round %d: token %d after %d", round, ls[0].Token, last)
		}
		last = ls[0].Token
		if err := q.Complete(ctx, ls[0]); err != nil {
			t.Fatal(err)
		}
		db.Close()
	}
}

// A bound queue runs in a transaction of another *sql.DB on the same
// file, after its own writes have prepared their statements on its pool.
func TestBoundToAnotherPoolsTransaction(t *testing.T) {
	ctx := t.Context()
	s := sqlitestore.Settings{}
	path := filepath.Join(t.TempDir(), "adk.db")
	mine, err := sqlitestore.OpenDB(path, s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mine.Close() })
	work, err := sqlitestore.OpenQueue(ctx, mine, nil, s)
	if err != nil {
		t.Fatal(err)
	}
	if err := work.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "first"}); err != nil {
		t.Fatal(err)
	}
	other, err := sqlitestore.OpenDB(path, s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	tx, err := other.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := work.Bound(tx).Enqueue(ctx, contract.Item{Tenant: "acme", ID: "second"}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := work.Item(ctx, contract.ItemKey{Tenant: "acme", ID: "second"}); err != nil {
		t.Fatalf("the bound enqueue did not land: %v", err)
	}
}
