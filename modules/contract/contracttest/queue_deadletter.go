package contracttest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/policy"
)

// queueDeadLetterCases pin the dead letter: what it shows, paging oldest
// first, filters, and Requeue and Purge acting on exactly what matches.
func queueDeadLetterCases() []subtest[QueueFactory] {
	return []subtest[QueueFactory]{
		{"ShowsItem", testDeadLetterShows},
		{"RequeueOne", testRequeueOne},
		{"RequeueAllMatching", testRequeueAllMatching},
		{"PurgeRemoves", testPurge},
		{"BulkActionsStayInFilter", testBulkStayInFilter},
		{"Filters", testDeadLetterFilters},
		{"Paging", testDeadLetterPaging},
	}
}

// kill enqueues the item, claims it and fails it permanently with msg at
// the clock's current time.
func kill(t *testing.T, q contract.WorkQueue, it contract.Item, msg string) {
	t.Helper()
	enqueue(t, q, it)
	ls, err := q.Claim(t.Context(), contract.ClaimRequest{Queue: it.Queue, Worker: "killer", LeaseFor: lease, Max: 1})
	mustNoErr(t, err, "claiming %s/%s to kill it", it.Tenant, it.ID)
	if len(ls) != 1 || ls[0].Item.ID != it.ID || ls[0].Item.Tenant != it.Tenant {
		t.Fatalf("claiming %s/%s to kill it got %v (the queue held other due work)", it.Tenant, it.ID, leaseIDs(ls))
	}
	d, err := q.Fail(t.Context(), ls[0], policy.Permanent(errors.New(msg)))
	mustNoErr(t, err, "Fail(Permanent)")
	if d.Retry {
		t.Fatalf("Fail(Permanent) decided to retry: %+v", d)
	}
}

func deadIDs(its []contract.Item) []string {
	out := make([]string, len(its))
	for i, it := range its {
		out[i] = it.Tenant + "/" + it.ID
	}
	return out
}

func testDeadLetterShows(t *testing.T, f QueueFactory) {
	q, clock := newQueue(t, f, testPolicy())
	t0 := clock.Now()
	in := contract.Item{Tenant: "acme", ID: "x", Payload: []byte("<script>payload</script>"), Metadata: map[string]string{"k": "v"}}
	enqueue(t, q, in)
	l := claimOne(t, q, "w")
	deadAt := clock.Advance(time.Second)
	_, err := q.Fail(t.Context(), l, policy.Permanent(errors.New("disk full")))
	mustNoErr(t, err, "Fail")
	dead := deadLetters(t, q, contract.DeadLetterFilter{})
	if len(dead) != 1 {
		t.Fatalf("DeadLetters lists %d items, want 1", len(dead))
	}
	d := dead[0]
	if d.Tenant != "acme" || d.ID != "x" || contract.QueueName(d.Queue) != contract.DefaultQueue || string(d.Payload) != string(in.Payload) {
		t.Errorf("dead letter is %q/%q/%q payload %q, want acme/default/x with the payload", d.Tenant, d.Queue, d.ID, d.Payload)
	}
	if d.State != contract.StateDead || d.Attempts != 1 || d.LastError != "disk full" {
		t.Errorf("dead letter State=%q Attempts=%d LastError=%q, want dead, 1, \"disk full\"", d.State, d.Attempts, d.LastError)
	}
	sameTime(t, "dead letter DeadAt", d.DeadAt, deadAt)
	sameTime(t, "dead letter EnqueuedAt", d.EnqueuedAt, t0)
	sameMetadata(t, "dead letter", d.Metadata, in.Metadata)
}

func testRequeueOne(t *testing.T, f QueueFactory) {
	q, _ := newQueue(t, f, testPolicy())
	kill(t, q, item("acme", "x"), "boom")
	kill(t, q, item("acme", "y"), "boom")
	kill(t, q, item("other", "x"), "boom")
	n, err := q.Requeue(t.Context(), contract.DeadLetterFilter{Tenant: "acme", ID: "x"})
	mustNoErr(t, err, "Requeue(acme/x)")
	if n != 1 {
		t.Errorf("Requeue(acme/x) moved %d, want 1", n)
	}
	l := claimOne(t, q, "w")
	if l.Item.Tenant != "acme" || l.Item.ID != "x" || l.Item.Attempts != 0 || l.Item.State != contract.StateLeased {
		t.Errorf("after Requeue claimed %s/%s attempts=%d state=%q, want acme/x with 0 attempts, leased",
			l.Item.Tenant, l.Item.ID, l.Item.Attempts, l.Item.State)
	}
	wantEmpty(t, q, "", "after claiming the requeued item")
	if got := deadIDs(deadLetters(t, q, contract.DeadLetterFilter{})); len(got) != 2 {
		t.Errorf("after requeueing one of three, dead letters = %v, want acme/y and other/x", got)
	}
	n, err = q.Requeue(t.Context(), contract.DeadLetterFilter{Tenant: "acme", ID: "x"})
	mustNoErr(t, err, "Requeue of an item no longer dead")
	if n != 0 {
		t.Errorf("Requeue of a leased (no longer dead) item moved %d, want 0", n)
	}
	mustNoErr(t, q.Complete(t.Context(), l), "Complete of the requeued item")
}

func testRequeueAllMatching(t *testing.T, f QueueFactory) {
	q, clock := newQueue(t, f, testPolicy())
	for i := range 3 {
		kill(t, q, item("t1", fmt.Sprintf("a%d", i)), "disk full")
	}
	kill(t, q, item("t1", "b"), "timeout")
	kill(t, q, item("t2", "c"), "disk full")
	n, err := q.Requeue(t.Context(), contract.DeadLetterFilter{Tenant: "t1", ErrorContains: "disk"})
	mustNoErr(t, err, "Requeue(tenant t1, error contains disk)")
	if n != 3 {
		t.Errorf("Requeue(t1, \"disk\") moved %d, want 3", n)
	}
	ls := drain(t, q, "", "w", 10)
	if len(ls) != 3 {
		t.Errorf("after requeueing 3, claimed %v", leaseIDs(ls))
	}
	for _, l := range ls {
		if l.Item.Tenant != "t1" || l.Item.Attempts != 0 {
			t.Errorf("requeued item %s/%s has attempts %d", l.Item.Tenant, l.Item.ID, l.Item.Attempts)
		}
	}
	clock.Advance(time.Second)
	n, err = q.Requeue(t.Context(), contract.DeadLetterFilter{})
	mustNoErr(t, err, "Requeue of every dead letter")
	if n != 2 {
		t.Errorf("Requeue with an empty filter moved %d, want the remaining 2", n)
	}
	if left := deadLetters(t, q, contract.DeadLetterFilter{}); len(left) != 0 {
		t.Errorf("dead letters after requeueing all: %v", deadIDs(left))
	}
}

func testPurge(t *testing.T, f QueueFactory) {
	q, _ := newQueue(t, f, testPolicy())
	kill(t, q, item("acme", "x"), "boom")
	kill(t, q, item("acme", "y"), "boom")
	n, err := q.Purge(t.Context(), contract.DeadLetterFilter{Tenant: "acme", ID: "x"})
	mustNoErr(t, err, "Purge(acme/x)")
	if n != 1 {
		t.Errorf("Purge(acme/x) removed %d, want 1", n)
	}
	if got := deadIDs(deadLetters(t, q, contract.DeadLetterFilter{})); len(got) != 1 || got[0] != "acme/y" {
		t.Errorf("dead letters after purging x = %v, want [acme/y]", got)
	}
	wantItemState(t, q, contract.ItemKey{Tenant: "acme", Queue: contract.DefaultQueue, ID: "x"}, "gone", "after Purge")
	wantEmpty(t, q, "", "after Purge (a purged item is not requeued)")
	fresh := contract.Item{Tenant: "acme", ID: "x", Payload: []byte("fresh")}
	enqueue(t, q, fresh)
	l := claimOne(t, q, "w")
	sameLeaseItem(t, "an ID enqueued again after Purge", l, fresh)
	n, err = q.Purge(t.Context(), contract.DeadLetterFilter{})
	mustNoErr(t, err, "Purge of everything")
	if n != 1 {
		t.Errorf("Purge with an empty filter removed %d, want 1 (acme/y; the leased x is not dead)", n)
	}
	mustNoErr(t, q.Complete(t.Context(), l), "Complete of a leased item after a Purge of everything")
}

func testBulkStayInFilter(t *testing.T, f QueueFactory) {
	q, clock := newQueue(t, f, testPolicy())
	for i := range 3 {
		kill(t, q, item("t1", fmt.Sprintf("disk%d", i)), "disk full")
	}
	for i := range 2 {
		kill(t, q, item("t1", fmt.Sprintf("slow%d", i)), "timeout after 30s")
	}
	for i := range 2 {
		kill(t, q, item("t2", fmt.Sprintf("disk%d", i)), "disk full")
	}
	other := item("t1", "elsewhere")
	other.Queue = "q2"
	kill(t, q, other, "disk full")
	// Live work of the same tenant must be out of reach of bulk actions.
	enqueue(t, q, item("t1", "queued"), item("t1", "leased"))
	var leased contract.Lease
	for _, l := range drain(t, q, "", "w", 10) {
		if l.Item.ID == "leased" {
			leased = l
		} else {
			_, err := q.Fail(t.Context(), l, errors.New("back to the queue"))
			mustNoErr(t, err, "Fail back to the queue")
		}
	}
	if leased.Token == 0 {
		t.Fatal("did not claim t1/leased")
	}

	n, err := q.Requeue(t.Context(), contract.DeadLetterFilter{Tenant: "t1", ErrorContains: "disk"})
	mustNoErr(t, err, "Requeue(t1, disk)")
	if n != 3 {
		t.Errorf("Requeue(t1, \"disk\") moved %d, want 3 (not t2's, not q2's, not the live items)", n)
	}
	n, err = q.Purge(t.Context(), contract.DeadLetterFilter{ErrorContains: "timeout"})
	mustNoErr(t, err, "Purge(timeout)")
	if n != 2 {
		t.Errorf("Purge(\"timeout\") removed %d, want 2", n)
	}
	if got := deadIDs(deadLetters(t, q, contract.DeadLetterFilter{})); len(got) != 2 || got[0][:3] != "t2/" || got[1][:3] != "t2/" {
		t.Errorf("dead letters of the default queue after the bulk actions = %v, want t2's two", got)
	}
	if got := deadIDs(deadLetters(t, q, contract.DeadLetterFilter{Queue: "q2"})); len(got) != 1 {
		t.Errorf("dead letters of q2 after bulk actions on the default queue = %v, want t1/elsewhere", got)
	}
	mustNoErr(t, q.Complete(t.Context(), leased), "Complete of a lease held through the bulk actions")
	clock.Advance(time.Minute)
	ls := drain(t, q, "", "w", 10)
	ids := map[string]bool{}
	for _, l := range ls {
		ids[l.Item.ID] = true
	}
	if len(ls) != 4 || !ids["queued"] || !ids["disk0"] || !ids["disk1"] || !ids["disk2"] {
		t.Errorf("after the bulk actions the default queue serves %v, want t1/queued and the three requeued", leaseIDs(ls))
	}
}

func testDeadLetterFilters(t *testing.T, f QueueFactory) {
	q, _ := newQueue(t, f, testPolicy())
	kill(t, q, item("t1", "a"), "disk full on /var")
	kill(t, q, item("t1", "b"), "Disk Full")
	kill(t, q, item("t2", "a"), "timeout")
	for _, c := range []struct {
		f    contract.DeadLetterFilter
		want int
	}{
		{contract.DeadLetterFilter{}, 3},
		{contract.DeadLetterFilter{Tenant: "t1"}, 2},
		{contract.DeadLetterFilter{ID: "a"}, 2},
		{contract.DeadLetterFilter{Tenant: "t2", ID: "a"}, 1},
		{contract.DeadLetterFilter{ErrorContains: "disk full"}, 1}, // case-sensitive
		{contract.DeadLetterFilter{ErrorContains: "%"}, 0},
		{contract.DeadLetterFilter{Tenant: "t"}, 0},
		{contract.DeadLetterFilter{Queue: "other"}, 0},
	} {
		got := deadLetters(t, q, c.f)
		if len(got) != c.want {
			t.Errorf("DeadLetters(%+v) = %v, want %d items", c.f, deadIDs(got), c.want)
		}
		for _, it := range got {
			if !c.f.Matches(it) {
				t.Errorf("DeadLetters(%+v) returned %s/%s, which the filter does not match", c.f, it.Tenant, it.ID)
			}
		}
	}
}

func testDeadLetterPaging(t *testing.T, f QueueFactory) {
	const n, limit = 25, 10
	q, clock := newQueue(t, f, testPolicy())
	var order []string
	// Ids run against death order, so paging by id would show.
	for i := range n {
		id := fmt.Sprintf("d%02d", n-1-i)
		clock.Advance(time.Second)
		kill(t, q, item("acme", id), "boom")
		order = append(order, id)
	}
	var seen []contract.Item
	cursor := ""
	for page := 0; ; page++ {
		if page > n {
			t.Fatal("dead letter paging never ended")
		}
		p, err := q.DeadLetters(t.Context(), contract.DeadLetterQuery{Page: contract.PageRequest{Cursor: cursor, Limit: limit}})
		mustNoErr(t, err, "DeadLetters page %d", page)
		if want := min(limit, n-page*limit); len(p.Items) != want {
			t.Errorf("dead letter page %d holds %d items, want %d", page, len(p.Items), want)
		}
		seen = append(seen, p.Items...)
		if p.Next == "" {
			if page != 2 {
				t.Errorf("%d dead letters at %d a page took %d pages, want 3", n, limit, page+1)
			}
			break
		}
		cursor = p.Next
	}
	if len(seen) != n {
		t.Fatalf("paging listed %d dead letters, want %d", len(seen), n)
	}
	for i, it := range seen {
		if it.ID != order[i] {
			t.Fatalf("dead letter %d is %s, want %s: pages must run oldest dead letter first, each once (got %v)", i, it.ID, order[i], deadIDs(seen))
		}
	}
	_, err := q.DeadLetters(t.Context(), contract.DeadLetterQuery{Page: contract.PageRequest{Limit: contract.MaxPageSize + 1}})
	wantInvalid(t, err, "DeadLetters with Limit MaxPageSize+1")
	p, err := q.DeadLetters(t.Context(), contract.DeadLetterQuery{})
	mustNoErr(t, err, "DeadLetters with Limit 0")
	if len(p.Items) != n || p.Next != "" {
		t.Errorf("DeadLetters with Limit 0 (default %d) returned %d items, next %q; want all %d", contract.DefaultPageSize, len(p.Items), p.Next, n)
	}
}
