package contracttest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
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
		{"ErrorFilterIgnoresASCIICase", testDeadLetterErrorCase},
		{"Paging", testDeadLetterPaging},
		{"PagingNewestFirst", testDeadLetterPagingNewest},
		{"PagingTurnsAround", testDeadLetterPagingTurns},
		{"PagingSkips", testDeadLetterPagingSkip},
		{"Summary", testDeadLetterSummary},
		{"SummaryFollowsFilter", testDeadLetterSummaryFilter},
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
		{contract.DeadLetterFilter{ErrorContains: "disk full"}, 2}, // ASCII case ignored
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

// testDeadLetterErrorCase pins the error filter's folding: ASCII letters
// match in any case, in the listing and in both bulk actions alike;
// other characters match only as they are.
func testDeadLetterErrorCase(t *testing.T, f QueueFactory) {
	q, _ := newQueue(t, f, testPolicy())
	kill(t, q, item("t1", "a"), "Timeout after 30s")
	kill(t, q, item("t1", "b"), "TIMEOUT")
	kill(t, q, item("t1", "c"), "read timeout")
	kill(t, q, item("t1", "d"), "Überlauf im Puffer")
	kill(t, q, item("t1", "e"), "disk full")
	for _, c := range []struct {
		sub  string
		want int
	}{
		{"timeout", 3}, {"TIMEOUT", 3}, {"tImEoUt", 3}, {"timeout after", 1},
		{"überlauf", 0}, // only ASCII folds: Ü is not ü
		{"Überlauf", 1}, {"PUFFER", 1}, {"DISK", 1},
	} {
		if got := deadLetters(t, q, contract.DeadLetterFilter{ErrorContains: c.sub}); len(got) != c.want {
			t.Errorf("DeadLetters(error contains %q) = %v, want %d", c.sub, deadIDs(got), c.want)
		}
	}
	n, err := q.Requeue(t.Context(), contract.DeadLetterFilter{ErrorContains: "TIMEOUT"})
	mustNoErr(t, err, "Requeue(error contains TIMEOUT)")
	if n != 3 {
		t.Errorf("Requeue(error contains TIMEOUT) moved %d, want 3", n)
	}
	n, err = q.Purge(t.Context(), contract.DeadLetterFilter{ErrorContains: "Disk"})
	mustNoErr(t, err, "Purge(error contains Disk)")
	if n != 1 {
		t.Errorf("Purge(error contains Disk) removed %d, want 1", n)
	}
	if got := deadIDs(deadLetters(t, q, contract.DeadLetterFilter{})); len(got) != 1 || got[0] != "t1/d" {
		t.Errorf("dead letters after the bulk actions = %v, want [t1/d]", got)
	}
}

// killSpaced kills n letters of tenant acme a second apart, ids against
// death order, and returns the ids in the order they died.
func killSpaced(t *testing.T, q contract.WorkQueue, clock *FakeClock, n int) []string {
	t.Helper()
	var order []string
	for i := range n {
		id := fmt.Sprintf("d%02d", n-1-i)
		clock.Advance(time.Second)
		kill(t, q, item("acme", id), "boom")
		order = append(order, id)
	}
	return order
}

func pageIDs(p contract.ItemPage) []string {
	out := make([]string, len(p.Items))
	for i, it := range p.Items {
		out[i] = it.ID
	}
	return out
}

func testDeadLetterPagingNewest(t *testing.T, f QueueFactory) {
	const n, limit = 25, 10
	q, clock := newQueue(t, f, testPolicy())
	order := killSpaced(t, q, clock, n)
	slices.Reverse(order)
	var seen []string
	cursor := ""
	for page := 0; ; page++ {
		if page > n {
			t.Fatal("newest-first paging never ended")
		}
		p, err := q.DeadLetters(t.Context(), contract.DeadLetterQuery{Newest: true, Page: contract.PageRequest{Cursor: cursor, Limit: limit}})
		mustNoErr(t, err, "DeadLetters(Newest) page %d", page)
		if want := min(limit, n-page*limit); len(p.Items) != want {
			t.Errorf("newest-first page %d holds %d letters, want %d", page, len(p.Items), want)
		}
		seen = append(seen, pageIDs(p)...)
		if p.Next == "" {
			break
		}
		cursor = p.Next
	}
	if !slices.Equal(seen, order) {
		t.Errorf("newest-first paging listed %v, want %v: the most recently dead first, each once", seen, order)
	}
	// A filter narrows the newest-first listing as it does the other.
	kill(t, q, item("other", "z"), "elsewhere")
	p, err := q.DeadLetters(t.Context(), contract.DeadLetterQuery{DeadLetterFilter: contract.DeadLetterFilter{Tenant: "acme"}, Newest: true, Page: contract.PageRequest{Limit: 2}})
	mustNoErr(t, err, "DeadLetters(acme, Newest)")
	if got := pageIDs(p); !slices.Equal(got, order[:2]) || p.Next == "" {
		t.Errorf("newest-first page of acme = %v (next %q), want %v and more", got, p.Next, order[:2])
	}
}

// testDeadLetterPagingTurns pins cursors as places between letters: from
// the cursor one order handed out, the other order lists the letters on
// the other side, nearest first. That is how a newest-first listing pages
// back to newer letters.
func testDeadLetterPagingTurns(t *testing.T, f QueueFactory) {
	const n, limit = 12, 4
	q, clock := newQueue(t, f, testPolicy())
	order := killSpaced(t, q, clock, n) // oldest first
	newest := slices.Clone(order)
	slices.Reverse(newest)
	get := func(newestFirst bool, cursor string) contract.ItemPage {
		t.Helper()
		p, err := q.DeadLetters(t.Context(), contract.DeadLetterQuery{Newest: newestFirst, Page: contract.PageRequest{Cursor: cursor, Limit: limit}})
		mustNoErr(t, err, "DeadLetters(Newest=%v, cursor %q)", newestFirst, cursor)
		return p
	}
	p1 := get(true, "")      // newest 4
	p2 := get(true, p1.Next) // the 4 before them
	if got := pageIDs(p2); !slices.Equal(got, newest[limit:2*limit]) {
		t.Fatalf("second newest-first page = %v, want %v", got, newest[limit:2*limit])
	}
	// Back from page 2 to page 1: oldest first from page 1's Next lists
	// page 1's letters, oldest of them first.
	back := get(false, p1.Next)
	want := slices.Clone(newest[:limit])
	slices.Reverse(want)
	if got := pageIDs(back); !slices.Equal(got, want) {
		t.Errorf("oldest-first from the first newest-first page's cursor = %v, want %v (that page, turned around)", got, want)
	}
	if back.Next != "" {
		t.Errorf("turning around at the newest letters: next %q, want \"\" (nothing is newer)", back.Next)
	}
	// And the other way: newest first from an oldest-first page's cursor.
	o1 := get(false, "")
	o2 := get(false, o1.Next)
	rev := get(true, o2.Next)
	want = slices.Clone(order[:2*limit])
	slices.Reverse(want)
	if got := pageIDs(rev); !slices.Equal(got, want[:limit]) {
		t.Errorf("newest-first from the second oldest-first page's cursor = %v, want %v", got, want[:limit])
	}
	// A cursor stays a place when the letter beside it leaves.
	n2, err := q.Purge(t.Context(), contract.DeadLetterFilter{Tenant: "acme", ID: newest[limit]})
	mustNoErr(t, err, "Purge(%s)", newest[limit])
	if n2 != 1 {
		t.Fatalf("Purge removed %d", n2)
	}
	if got := pageIDs(get(true, p1.Next)); !slices.Equal(got, newest[limit+1:2*limit+1]) {
		t.Errorf("after purging the letter past the cursor, the page from it = %v, want %v", got, newest[limit+1:2*limit+1])
	}
}

func testDeadLetterSummary(t *testing.T, f QueueFactory) {
	q, clock := newQueue(t, f, testPolicy())
	ins := inspectorOf(t, q)
	long := strings.Repeat("x", contract.ErrorGroupRunes)
	for i := range 4 {
		clock.Advance(time.Second)
		kill(t, q, item("t1", fmt.Sprint("to", i)), "timeout")
	}
	lastTimeout := clock.Advance(time.Second)
	kill(t, q, item("t2", "to"), "timeout")
	clock.Advance(time.Second)
	kill(t, q, item("t1", "l1"), long+" first")
	kill(t, q, item("t2", "l2"), long+" second") // the same group: they differ past the cut
	kill(t, q, item("t1", "b"), "bad input")
	kill(t, q, item("t2", "a"), "auth failed")
	other := item("t1", "elsewhere")
	other.Queue = "q2"
	kill(t, q, other, "timeout")

	s, err := ins.DeadLetterSummary(t.Context(), contract.DeadLetterFilter{}, 10)
	mustNoErr(t, err, "DeadLetterSummary")
	type g struct {
		err   string
		count int64
	}
	var got []g
	for _, gr := range s.Groups {
		got = append(got, g{gr.Error, gr.Count})
	}
	want := []g{{"timeout", 5}, {long, 2}, {"auth failed", 1}, {"bad input", 1}}
	if s.Total != 9 || s.Distinct != 4 || !slices.Equal(got, want) {
		t.Errorf("summary = total %d, distinct %d, groups %v; want 9, 4, %v (largest first, ties in byte order, long errors cut at %d characters)",
			s.Total, s.Distinct, got, want, contract.ErrorGroupRunes)
	}
	if len(s.Groups) > 0 {
		sameTime(t, "the timeout group's LastDeadAt", s.Groups[0].LastDeadAt, lastTimeout)
	}
	s, err = ins.DeadLetterSummary(t.Context(), contract.DeadLetterFilter{}, 1)
	mustNoErr(t, err, "DeadLetterSummary(groups 1)")
	if s.Total != 9 || s.Distinct != 4 || len(s.Groups) != 1 || s.Groups[0].Error != "timeout" {
		t.Errorf("summary with one group = %+v, want total 9, distinct 4, only the timeout group", s)
	}
	s, err = ins.DeadLetterSummary(t.Context(), contract.DeadLetterFilter{}, 0)
	mustNoErr(t, err, "DeadLetterSummary(groups 0)")
	if s.Total != 9 || len(s.Groups) != 0 {
		t.Errorf("count-only summary = %+v, want total 9 and no groups", s)
	}
	for _, bad := range []int{-1, contract.MaxErrorGroups + 1} {
		_, err := ins.DeadLetterSummary(t.Context(), contract.DeadLetterFilter{}, bad)
		wantInvalid(t, err, "DeadLetterSummary(groups %d)", bad)
	}
	_, err = ins.DeadLetterSummary(t.Context(), contract.DeadLetterFilter{Tenant: "\x00"}, 1)
	wantInvalid(t, err, "DeadLetterSummary with a NUL tenant")
}

// testDeadLetterSummaryFilter pins that a summary counts exactly what the
// listing and the bulk actions of the same filter reach.
func testDeadLetterSummaryFilter(t *testing.T, f QueueFactory) {
	q, _ := newQueue(t, f, testPolicy())
	ins := inspectorOf(t, q)
	kill(t, q, item("t1", "a"), "Timeout after 30s")
	kill(t, q, item("t1", "b"), "disk full")
	kill(t, q, item("t2", "a"), "TIMEOUT")
	kill(t, q, item("t2", "b"), "timeout")
	enqueue(t, q, item("t1", "live"))
	for _, fl := range []contract.DeadLetterFilter{
		{}, {Tenant: "t1"}, {ID: "a"}, {Tenant: "t2", ID: "b"}, {ErrorContains: "timeout"}, {Tenant: "t2", ErrorContains: "TimeOut"},
		{ErrorContains: "nothing"}, {Tenant: "nobody"}, {Queue: "q2"},
	} {
		s, err := ins.DeadLetterSummary(t.Context(), fl, contract.MaxErrorGroups)
		mustNoErr(t, err, "DeadLetterSummary(%+v)", fl)
		listed := deadLetters(t, q, fl)
		var inGroups int64
		for _, gr := range s.Groups {
			inGroups += gr.Count
		}
		if s.Total != int64(len(listed)) || inGroups != s.Total || s.Distinct != int64(len(s.Groups)) {
			t.Errorf("DeadLetterSummary(%+v) = total %d, %d in %d groups (distinct %d); the listing shows %d",
				fl, s.Total, inGroups, len(s.Groups), s.Distinct, len(listed))
		}
		c, err := ins.DeadLetterSummary(t.Context(), fl, 0)
		mustNoErr(t, err, "DeadLetterSummary(%+v, 0)", fl)
		if c.Total != s.Total {
			t.Errorf("count-only DeadLetterSummary(%+v) = %d, grouped %d", fl, c.Total, s.Total)
		}
	}
}

// testDeadLetterPagingSkip pins Skip: the page starts that many matching
// letters on from the cursor's place, in the query's order, and its Next
// goes on from the page as always.
func testDeadLetterPagingSkip(t *testing.T, f QueueFactory) {
	const n = 25
	q, clock := newQueue(t, f, testPolicy())
	order := killSpaced(t, q, clock, n) // oldest first
	kill(t, q, item("other", "x"), "elsewhere")
	newest := slices.Clone(order)
	slices.Reverse(newest)
	acme := contract.DeadLetterFilter{Tenant: "acme"}
	get := func(newestFirst bool, cursor string, skip, limit int) contract.ItemPage {
		t.Helper()
		p, err := q.DeadLetters(t.Context(), contract.DeadLetterQuery{DeadLetterFilter: acme, Newest: newestFirst, Skip: skip, Page: contract.PageRequest{Cursor: cursor, Limit: limit}})
		mustNoErr(t, err, "DeadLetters(Newest=%v, Skip=%d)", newestFirst, skip)
		return p
	}
	p := get(true, "", 7, 5)
	if got := pageIDs(p); !slices.Equal(got, newest[7:12]) || p.Next == "" {
		t.Errorf("newest first, skip 7, 5 a page = %v (next %q), want %v", got, p.Next, newest[7:12])
	}
	if got := pageIDs(get(true, p.Next, 0, 5)); !slices.Equal(got, newest[12:17]) {
		t.Errorf("the page after a skipped-to page = %v, want %v", got, newest[12:17])
	}
	if got := pageIDs(get(true, p.Next, 3, 5)); !slices.Equal(got, newest[15:20]) {
		t.Errorf("skip 3 from a cursor = %v, want %v", got, newest[15:20])
	}
	last := get(false, "", 20, 10)
	if got := pageIDs(last); !slices.Equal(got, order[20:]) || last.Next != "" {
		t.Errorf("oldest first, skip 20 = %v (next %q), want %v and no next", got, last.Next, order[20:])
	}
	if past := get(false, "", n, 10); len(past.Items) != 0 || past.Next != "" {
		t.Errorf("skipping every letter gave %v (next %q), want an empty last page", pageIDs(past), past.Next)
	}
	_, err := q.DeadLetters(t.Context(), contract.DeadLetterQuery{Skip: -1})
	wantInvalid(t, err, "DeadLetters with Skip -1")
}
