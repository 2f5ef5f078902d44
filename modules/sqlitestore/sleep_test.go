package sqlitestore_test

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/sqlitestore"
)

// asleep reads whether tenant's turn row in the default queue sleeps.
func asleep(t *testing.T, db *sql.DB, tenant string) bool {
	t.Helper()
	var v bool
	if err := db.QueryRow("SELECT asleep FROM adk_turns WHERE queue = ? AND tenant = ?", contract.DefaultQueue, tenant).Scan(&v); err != nil {
		t.Fatalf("turn row of %s: %v", tenant, err)
	}
	return v
}

// claimTenants claims up to max items and returns their tenant/id.
func claimTenants(t *testing.T, ctx context.Context, q contract.WorkQueue, max int) []string {
	t.Helper()
	ls, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Hour, Max: max})
	if err != nil && !errors.Is(err, contract.ErrEmpty) {
		t.Fatal(err)
	}
	var out []string
	for _, l := range ls {
		out = append(out, l.Item.Tenant+"/"+l.Item.ID)
	}
	return out
}

// A tenant whose queued items are all delayed sleeps out of the walk of
// the rotation, keeping its stamp: a served tenant whose next item is
// delayed falls asleep, as does one whose items are all delayed when it
// joins and one whose only due item is cancelled. The claim after its
// first item falls due wakes and serves it before the tenants served
// since (its place was kept), on a queue without limits and on one with
// them.
func TestSleepingTenantsKeepTheirPlace(t *testing.T) {
	for _, limits := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "limits"}[limits], func(t *testing.T) {
			ctx := t.Context()
			db := newFile(t, sqlitestore.Settings{})
			clock := contracttest.NewFakeClock(contracttest.FakeEpoch)
			q, err := sqlitestore.OpenQueue(ctx, db, clock, sqlitestore.Settings{})
			if err != nil {
				t.Fatal(err)
			}
			if limits {
				if err := q.SetLimits(ctx, "", "", contract.Limits{MaxLeased: 100}); err != nil {
					t.Fatal(err)
				}
			}
			hour := clock.Now().Add(time.Hour)
			if err := q.Enqueue(ctx,
				contract.Item{Tenant: "served", ID: "a"}, contract.Item{Tenant: "served", ID: "b", NotBefore: hour},
				contract.Item{Tenant: "delayed", ID: "a", NotBefore: hour},
				contract.Item{Tenant: "cancelled", ID: "a"}, contract.Item{Tenant: "cancelled", ID: "b", NotBefore: hour},
				contract.Item{Tenant: "busy", ID: "1"}, contract.Item{Tenant: "busy", ID: "2"}, contract.Item{Tenant: "busy", ID: "3"},
			); err != nil {
				t.Fatal(err)
			}
			if !asleep(t, db, "delayed") || asleep(t, db, "served") || asleep(t, db, "busy") {
				t.Fatal("after the enqueue, want delayed asleep and the tenants with an item due awake")
			}
			if _, err := q.Cancel(ctx, contract.ItemKey{Tenant: "cancelled", ID: "a"}, "not needed"); err != nil {
				t.Fatal(err)
			}
			if got := claimTenants(t, ctx, q, 1); !slices.Equal(got, []string{"served/a"}) {
				t.Fatalf("first claim = %v, want [served/a]", got)
			}
			for _, tenant := range []string{"served", "delayed", "cancelled"} {
				if !asleep(t, db, tenant) {
					t.Fatalf("%s is awake with nothing due", tenant)
				}
			}
			if got := claimTenants(t, ctx, q, 1); !slices.Equal(got, []string{"busy/1"}) {
				t.Fatalf("second claim = %v, want [busy/1]", got)
			}
			clock.Set(hour)
			// Stamps: delayed 2 and cancelled 3 from their enqueue, kept
			// while asleep; served 5 and busy 6 from the two claims.
			want := []string{"delayed/a", "cancelled/b", "served/b", "busy/2", "busy/3"}
			if got := claimTenants(t, ctx, q, 10); !slices.Equal(got, want) {
				t.Fatalf("claim once the delayed items are due = %v, want %v (the sleepers first, in the places they kept)", got, want)
			}
		})
	}
}
