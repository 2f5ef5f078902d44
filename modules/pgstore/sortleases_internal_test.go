package pgstore

import (
	"strings"
	"testing"

	"github.com/adkit/adk/modules/contract"
)

// claim.sql returns its leases unsorted; sortLeases hands them out in the
// walk's order: round, then the tenant's place in the rotation, then its
// name (tenants that share a place), then the item's place in its chunk.
func TestSortLeasesInWalkOrder(t *testing.T) {
	row := func(tenant, id string, round, pos, sub int64) claimRow {
		return claimRow{kind: "lease", lease: contract.Lease{Item: contract.Item{Tenant: tenant, ID: id}}, round: round, pos: pos, sub: sub}
	}
	rs := []claimRow{
		row("b", "b2", 2, 5, 2), row("a", "a1", 1, 7, 1), row("c", "c1", 1, 5, 1),
		row("b", "b1", 1, 5, 1), row("b", "b3", 2, 5, 3), row("a", "a2", 2, 7, 1),
	}
	var ids []string
	for _, l := range sortLeases(rs) {
		ids = append(ids, l.Item.ID)
	}
	if got, want := strings.Join(ids, ","), "b1,c1,a1,b2,b3,a2"; got != want {
		t.Fatalf("leases in the order %s, want %s", got, want)
	}
	if got := sortLeases(nil); len(got) != 0 {
		t.Fatalf("no rows gave %d leases", len(got))
	}
}
