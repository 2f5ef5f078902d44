//go:build integration

package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/pgstore"
)

func countVersions(t *testing.T, d *testDB, tenant, id string) int {
	t.Helper()
	var n int
	if err := d.pool.QueryRow(context.Background(), `SELECT count(*) FROM adk_runs_versions WHERE tenant = $1 AND id = $2`, tenant, id).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func listAll(t *testing.T, k contract.RunKeeper, tenant, id string, limit int) []contract.Run {
	t.Helper()
	var out []contract.Run
	page := contract.PageRequest{Limit: limit}
	for {
		p, err := k.ListRunVersions(context.Background(), tenant, id, page)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p.Versions...)
		if p.Next == "" {
			return out
		}
		page.Cursor = p.Next
	}
}

func versionsOf(rs []contract.Run) []int64 {
	var v []int64
	for _, r := range rs {
		v = append(v, r.Version)
	}
	return v
}

// KeepVersions 3: every put keeps the run it replaced, a status patch
// keeps one, a counter-only patch none; reads show exactly the newest
// three, and the write whose turn it is (the one that leaves the run at
// a multiple of pruneEvery) deletes the rest; the listing pages newest
// first, the run first; a version past the count is not found.
func TestVersionsKeepN(t *testing.T) {
	ctx := ctxT(t, time.Minute)
	d := newTestDB(t)
	clock := contracttest.NewFakeClock(t0)
	s := stateWith(t, d, clock, contract.RunPolicy{KeepVersions: 3})
	r := mustPut(t, s, contract.Run{Tenant: "acme", ID: "r", Session: "s1", Status: "new", Data: []byte(`{"step":1}`)})
	for step := 2; step <= 6; step++ {
		clock.Advance(time.Second)
		r = mustPut(t, s, contract.Run{Tenant: "acme", ID: "r", Session: "s1", Status: "new", Version: r.Version, Fence: int64(step), Data: []byte(fmt.Sprintf(`{"step":%d}`, step))})
	}
	if r, err := s.PatchRun(ctx, "acme", "r", contract.Patch{Counters: contract.Counters{Iterations: 5}}); err != nil || r.Version != 7 {
		t.Fatalf("counter patch: %+v, %v", r, err)
	}
	if pgstore.PruneEvery != 8 {
		t.Fatalf("PruneEvery is %d; the counts below assume 8", pgstore.PruneEvery)
	}
	if n := countVersions(t, d, "acme", "r"); n != 5 {
		t.Fatalf("%d versions stored after six puts and a counter patch, want 5 (none pruned before version 8)", n)
	}
	all := listAll(t, s, "acme", "r", 2)
	if got := versionsOf(all); fmt.Sprint(got) != "[7 5 4 3]" {
		t.Fatalf("versions listed %v, want [7 5 4 3] (the run, then the kept ones newest first)", got)
	}
	v5 := all[1]
	if string(v5.Data) != `{"step":5}` || v5.Fence != 5 || v5.Status != "new" || v5.Session != "s1" || !v5.UpdatedAt.Equal(t0.Add(4*time.Second)) || v5.Seq != all[0].Seq || !v5.CreatedAt.Equal(t0) {
		t.Fatalf("version 5: %+v", v5)
	}
	if _, err := s.GetRunVersion(ctx, "acme", "r", 2); !errors.Is(err, contract.ErrNotFound) {
		t.Fatalf("version 2 (past the count): %v, want ErrNotFound", err)
	}
	if got, err := s.GetRunVersion(ctx, "acme", "r", 7); err != nil || got.Counters.Iterations != 5 {
		t.Fatalf("the current version: %+v, %v", got, err)
	}
	if _, err := s.GetRunVersion(ctx, "acme", "r", 6); !errors.Is(err, contract.ErrNotFound) {
		t.Fatalf("version 6 (replaced by a counter patch, never kept): %v, want ErrNotFound", err)
	}
	// A status patch keeps one; a patch to the same status changes nothing
	// of it and keeps none.
	if _, err := s.PatchRun(ctx, "acme", "r", contract.Patch{Status: "done"}); err != nil {
		t.Fatal(err)
	}
	// That patch left the run at version 8: its prune deleted all but the
	// newest three (7, 5 and 4).
	if n := countVersions(t, d, "acme", "r"); n != 3 {
		t.Fatalf("%d versions stored after the patch to version 8, want 3", n)
	}
	if _, err := s.PatchRun(ctx, "acme", "r", contract.Patch{Status: "done", Counters: contract.Counters{Iterations: 1}}); err != nil {
		t.Fatal(err)
	}
	if got := versionsOf(listAll(t, s, "acme", "r", 100)); fmt.Sprint(got) != "[9 7 5 4]" {
		t.Fatalf("versions after two status patches %v, want [9 7 5 4]", got)
	}
	if _, err := s.ListRunVersions(ctx, "acme", "nobody", contract.PageRequest{}); !errors.Is(err, contract.ErrNotFound) {
		t.Fatalf("versions of a missing run: %v", err)
	}
	for _, c := range []string{"x", "-1", "0"} {
		if _, err := s.ListRunVersions(ctx, "acme", "r", contract.PageRequest{Cursor: c}); !errors.Is(err, contract.ErrInvalid) {
			t.Errorf("cursor %q: %v, want a validation error", c, err)
		}
	}
	// A store keeping none lists the run alone; the versions stay stored.
	off := stateWith(t, d, clock, contract.RunPolicy{})
	if got := versionsOf(listAll(t, off, "acme", "r", 100)); fmt.Sprint(got) != "[9]" {
		t.Fatalf("versions on a store that keeps none: %v, want [9]", got)
	}
	if err := s.DeleteRun(ctx, "acme", "r"); err != nil {
		t.Fatal(err)
	}
	if n := countVersions(t, d, "acme", "r"); n != 0 {
		t.Fatalf("%d versions left after DeleteRun", n)
	}
}

// VersionAge by the store's clock: a version is not returned once its
// UpdatedAt is that old, and the run's next write whose turn it is to
// prune deletes it.
func TestVersionsAge(t *testing.T) {
	ctx := ctxT(t, time.Minute)
	d := newTestDB(t)
	clock := contracttest.NewFakeClock(t0)
	s := stateWith(t, d, clock, contract.RunPolicy{VersionAge: time.Hour})
	r := mustPut(t, s, contract.Run{Tenant: "acme", ID: "r"})
	r = mustPut(t, s, contract.Run{Tenant: "acme", ID: "r", Version: r.Version}) // keeps v1, updated at t0
	clock.Advance(30 * time.Minute)
	r = mustPut(t, s, contract.Run{Tenant: "acme", ID: "r", Version: r.Version}) // keeps v2, updated at t0
	clock.Advance(20 * time.Minute)
	r = mustPut(t, s, contract.Run{Tenant: "acme", ID: "r", Version: r.Version}) // keeps v3, updated at t0+30m
	if got := versionsOf(listAll(t, s, "acme", "r", 10)); fmt.Sprint(got) != "[4 3 2 1]" {
		t.Fatalf("at t0+50m: %v", got)
	}
	clock.Set(t0.Add(time.Hour)) // v1 and v2 are an hour old
	if got := versionsOf(listAll(t, s, "acme", "r", 10)); fmt.Sprint(got) != "[4 3]" {
		t.Fatalf("at t0+1h: %v, want [4 3]", got)
	}
	if _, err := s.GetRunVersion(ctx, "acme", "r", 1); !errors.Is(err, contract.ErrNotFound) {
		t.Fatalf("an expired version: %v", err)
	}
	if _, err := s.ForkRun(ctx, "acme", "r", 2, "f"); !errors.Is(err, contract.ErrNotFound) {
		t.Fatalf("fork of an expired version: %v", err)
	}
	if n := countVersions(t, d, "acme", "r"); n != 3 {
		t.Fatalf("%d stored before the next write, want 3 (reads delete nothing)", n)
	}
	// Puts keep 4, 5 and 6; the one that leaves the run at version 8
	// keeps 7 and deletes 1 and 2.
	for stored := 3; r.Version < pgstore.PruneEvery; stored++ {
		r = mustPut(t, s, contract.Run{Tenant: "acme", ID: "r", Version: r.Version})
		want := stored + 1
		if r.Version == pgstore.PruneEvery {
			want = stored + 1 - 2
		}
		if n := countVersions(t, d, "acme", "r"); n != want {
			t.Fatalf("%d stored after the write to version %d, want %d", n, r.Version, want)
		}
	}
	if got := versionsOf(listAll(t, s, "acme", "r", 10)); fmt.Sprint(got) != "[8 7 6 5 4 3]" {
		t.Fatalf("after the prune: %v", got)
	}
}

// One write deletes at most VersionPruneBatch versions: a run with a
// backlog (kept under a larger count) is brought down a batch on each of
// its turns to prune (once in pruneEvery writes), the writes between
// keep a version each and delete none, and reads show only what the
// policy keeps meanwhile.
func TestVersionsPruneBounded(t *testing.T) {
	ctx := ctxT(t, 2*time.Minute)
	d := newTestDB(t)
	big := stateWith(t, d, nil, contract.RunPolicy{KeepVersions: contract.MaxRunVersions})
	r := mustPut(t, big, contract.Run{Tenant: "acme", ID: "r"})
	backlog := 2*contract.VersionPruneBatch + 30
	// Versions in bulk, as many writes would have kept them.
	if _, err := d.pool.Exec(ctx, `INSERT INTO adk_runs_versions (tenant, id, version, updated_at)
		SELECT 'acme', 'r', -g, now() FROM generate_series(1, $1) g`, backlog); err != nil {
		t.Fatal(err)
	}
	small := stateWith(t, d, nil, contract.RunPolicy{KeepVersions: 2})
	stored := backlog
	for stored > 2 {
		r = mustPut(t, small, contract.Run{Tenant: "acme", ID: "r", Version: r.Version})
		want := stored + 1
		if r.Version%pgstore.PruneEvery == 0 {
			want = max(2, stored+1-contract.VersionPruneBatch)
		}
		if n := countVersions(t, d, "acme", "r"); n != want {
			t.Fatalf("%d versions stored after the write to version %d, want %d", n, r.Version, want)
		}
		stored = want
		if got := len(listAll(t, small, "acme", "r", 100)); got != 3 {
			t.Fatalf("%d listed, want the run and 2", got)
		}
	}
}

// ForkRun copies the chosen version's data, status, session and counters
// (not a later one's) into a new run at version 1, unfenced, with a new
// seq and no versions; the source is unchanged; a missing version is
// ErrNotFound and an existing id a conflict naming its version.
func TestForkRun(t *testing.T) {
	ctx := ctxT(t, time.Minute)
	d := newTestDB(t)
	clock := contracttest.NewFakeClock(t0)
	s := stateWith(t, d, clock, contract.RunPolicy{KeepVersions: 10})
	mustPut(t, s, contract.Run{Tenant: "acme", ID: "src", Session: "s", Status: "a", Fence: 3, Data: []byte(`{"at":1}`)})
	if _, err := s.PatchRun(ctx, "acme", "src", contract.Patch{Counters: contract.Counters{InputTokens: 10, CostMicros: 7}}); err != nil {
		t.Fatal(err)
	}
	r := mustPut(t, s, contract.Run{Tenant: "acme", ID: "src", Session: "s", Status: "b", Version: 2, Fence: 4, Data: []byte(`{"at":2}`)})
	if _, err := s.PatchRun(ctx, "acme", "src", contract.Patch{Counters: contract.Counters{InputTokens: 5}}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute)
	f, err := s.ForkRun(ctx, "acme", "src", 2, "fork")
	if err != nil {
		t.Fatal(err)
	}
	if string(f.Data) != `{"at":1}` || f.Status != "a" || f.Session != "s" || f.Counters != (contract.Counters{InputTokens: 10, CostMicros: 7}) ||
		f.Version != 1 || f.Fence != 0 || f.Seq <= r.Seq || !f.CreatedAt.Equal(t0.Add(time.Minute)) || f.ID != "fork" {
		t.Fatalf("fork of version 2: %+v", f)
	}
	if got := versionsOf(listAll(t, s, "acme", "fork", 10)); fmt.Sprint(got) != "[1]" {
		t.Fatalf("the fork's versions %v, want itself alone", got)
	}
	// The current version forks too.
	if f2, err := s.ForkRun(ctx, "acme", "src", 4, "fork2"); err != nil || f2.Counters.InputTokens != 15 || string(f2.Data) != `{"at":2}` {
		t.Fatalf("fork of the current version: %+v, %v", f2, err)
	}
	if src, err := s.GetRun(ctx, "acme", "src"); err != nil || src.Version != 4 || src.Fence != 4 {
		t.Fatalf("the source after forks: %+v, %v", src, err)
	}
	var sc *contract.StateConflictError
	if _, err := s.ForkRun(ctx, "acme", "src", 2, "fork"); !errors.As(err, &sc) || sc.ID != "fork" || sc.Expected != 0 || sc.Actual != 1 {
		t.Fatalf("fork onto an existing id: %v, want a conflict naming fork at version 1", err)
	}
	for _, v := range []int64{3, 5, 99} {
		if _, err := s.ForkRun(ctx, "acme", "src", v, "nope"); !errors.Is(err, contract.ErrNotFound) {
			t.Fatalf("fork of version %d (not kept): %v, want ErrNotFound", v, err)
		}
	}
	if _, err := s.ForkRun(ctx, "acme", "missing", 1, "nope"); !errors.Is(err, contract.ErrNotFound) {
		t.Fatalf("fork of a missing run: %v", err)
	}
	if _, err := s.GetRun(ctx, "acme", "nope"); !errors.Is(err, contract.ErrNotFound) {
		t.Fatalf("a refused fork created its run: %v", err)
	}
}

// Bound(tx): a fork and the enqueue of its first item commit together,
// and roll back together.
func TestForkRunBound(t *testing.T) {
	ctx := ctxT(t, time.Minute)
	d := newTestDB(t)
	s := stateWith(t, d, nil, contract.RunPolicy{KeepVersions: 5})
	q := newQueue(t, d, pgstore.Settings{})
	r := mustPut(t, s, contract.Run{Tenant: "acme", ID: "src", Data: []byte(`{"n":1}`)})
	mustPut(t, s, contract.Run{Tenant: "acme", ID: "src", Version: r.Version, Data: []byte(`{"n":2}`)})
	errAbort := errors.New("abort")
	fork := func(id string, fail bool) error {
		return pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
			if _, err := s.Bound(tx).ForkRun(ctx, "acme", "src", 1, id); err != nil {
				return err
			}
			if err := q.Bound(tx).Enqueue(ctx, contract.Item{Tenant: "acme", ID: id + "/step-1"}); err != nil {
				return err
			}
			if fail {
				return errAbort
			}
			return nil
		})
	}
	if err := fork("rolled-back", true); !errors.Is(err, errAbort) {
		t.Fatal(err)
	}
	if _, err := s.GetRun(ctx, "acme", "rolled-back"); !errors.Is(err, contract.ErrNotFound) {
		t.Fatalf("the fork of a rolled-back transaction: %v", err)
	}
	if err := fork("kept", false); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetRun(ctx, "acme", "kept")
	if err != nil || string(got.Data) != `{"n":1}` {
		t.Fatalf("the committed fork: %+v, %v", got, err)
	}
	ls, err := q.Claim(ctx, contract.ClaimRequest{LeaseFor: time.Minute, Max: 5})
	if err != nil || len(ls) != 1 || ls[0].Item.ID != "kept/step-1" {
		t.Fatalf("claimed %+v, %v; want the committed fork's item alone", ls, err)
	}
}

// Paging is stable while the run is written: versions kept after the
// first page (all newer) appear on no later page, none still kept is
// skipped or repeated.
func TestVersionsPageWhileWritten(t *testing.T) {
	d := newTestDB(t)
	s := stateWith(t, d, nil, contract.RunPolicy{KeepVersions: 100})
	r := mustPut(t, s, contract.Run{Tenant: "acme", ID: "r"})
	for range 20 {
		r = mustPut(t, s, contract.Run{Tenant: "acme", ID: "r", Version: r.Version})
	}
	ctx := context.Background()
	p, err := s.ListRunVersions(ctx, "acme", "r", contract.PageRequest{Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	seen := versionsOf(p.Versions)
	for p.Next != "" {
		r = mustPut(t, s, contract.Run{Tenant: "acme", ID: "r", Version: r.Version})
		if p, err = s.ListRunVersions(ctx, "acme", "r", contract.PageRequest{Limit: 5, Cursor: p.Next}); err != nil {
			t.Fatal(err)
		}
		seen = append(seen, versionsOf(p.Versions)...)
	}
	for i, v := range seen {
		if v != int64(21-i) {
			t.Fatalf("paged %v, want 21 down to 1", seen)
		}
	}
	if len(seen) != 21 {
		t.Fatalf("paged %v, want 21 down to 1", seen)
	}
}

// A patch on its turn to prune from a store that did not expect the turn
// (here a store that has not written the run before) sends the prune
// after it, as a transaction of its own whose commit does not wait for
// the WAL flush: the setting is local to that transaction, so the
// connection's next statement commits as the server is configured again.
// Inside a caller's transaction the prune leaves the setting alone (the
// transaction's commit is the caller's).
func TestPatchPruneCommitsLazily(t *testing.T) {
	ctx := ctxT(t, time.Minute)
	d := newTestDB(t, withMaxConns(1))
	var want string
	if err := d.pool.QueryRow(ctx, "SHOW synchronous_commit").Scan(&want); err != nil {
		t.Fatal(err)
	}
	policy := contract.RunPolicy{KeepVersions: 2}
	s := stateWith(t, d, nil, policy)
	mustPut(t, s, contract.Run{Tenant: "acme", ID: "r"})
	for i := range pgstore.PruneEvery - 1 {
		// The last patch, the one on the turn, comes from a store that has
		// not written the run: it cannot expect the turn.
		w := s
		if i == pgstore.PruneEvery-2 {
			w = stateWith(t, d, nil, policy)
		}
		r, err := w.PatchRun(ctx, "acme", "r", contract.Patch{Status: fmt.Sprint(i)})
		if err != nil {
			t.Fatal(err)
		}
		if i == pgstore.PruneEvery-2 && r.Version != pgstore.PruneEvery {
			t.Fatalf("the last patch left version %d, want %d", r.Version, pgstore.PruneEvery)
		}
	}
	if n := countVersions(t, d, "acme", "r"); n != 2 {
		t.Fatalf("%d versions stored after the patch to version %d, want 2", n, pgstore.PruneEvery)
	}
	var got string
	if err := d.pool.QueryRow(ctx, "SHOW synchronous_commit").Scan(&got); err != nil || got != want {
		t.Fatalf("synchronous_commit after the prune: %q, %v; want %q", got, err, want)
	}

	mustPut(t, s, contract.Run{Tenant: "acme", ID: "b"})
	tx, err := d.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	b := s.Bound(tx)
	for i := range pgstore.PruneEvery - 1 {
		if i == pgstore.PruneEvery-2 {
			b = stateWith(t, d, nil, policy).Bound(tx)
		}
		if _, err := b.PatchRun(ctx, "acme", "b", contract.Patch{Status: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.QueryRow(ctx, "SHOW synchronous_commit").Scan(&got); err != nil || got != want {
		t.Fatalf("synchronous_commit inside the caller's transaction after its prune: %q, %v; want %q", got, err, want)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if n := countVersions(t, d, "acme", "b"); n != 2 {
		t.Fatalf("%d versions stored after the bound patch to version %d, want 2", n, pgstore.PruneEvery)
	}
}

// statementCounter is a pgx tracer counting the statements sent, by SQL.
type statementCounter struct {
	mu   sync.Mutex
	sent map[string]int
}

func (c *statementCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sent == nil {
		c.sent = map[string]int{}
	}
	c.sent[data.SQL]++
	return ctx
}

func (c *statementCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// take returns how often sql was sent since the last take of it.
func (c *statementCounter) take(sql string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.sent[sql]
	delete(c.sent, sql)
	return n
}

// On a store that keeps versions, a status patch that lands sends one
// statement, its first try without the row lock; that try returns no row
// when it wrote nothing, and a patch refused by its fence or by a counter
// past the range, or of a missing run, is decided by the try that locks
// the row, refuses whole and keeps no version.
func TestStatusPatchRefusedOnItsLock(t *testing.T) {
	ctx := ctxT(t, time.Minute)
	tr := &statementCounter{}
	d := newTestDB(t, withMaxConns(1), func(c *pgxpool.Config) { c.ConnConfig.Tracer = tr })
	sql := pgstore.StatusPatchStatements(pgstore.StateTables{})
	s := stateWith(t, d, nil, contract.RunPolicy{KeepVersions: 3})
	created := mustPut(t, s, contract.Run{Tenant: "acme", ID: "r", Status: "new", Fence: 10})
	sent := func(what string, first, lock int) {
		t.Helper()
		if f, l := tr.take(sql.First)+tr.take(sql.FirstPrune), tr.take(sql.Lock); f != first || l != lock {
			t.Fatalf("%s sent %d first tries and %d locking tries, want %d and %d", what, f, l, first, lock)
		}
	}
	r, err := s.PatchRun(ctx, "acme", "r", contract.Patch{Status: "on", Fence: 10, Counters: contract.Counters{Iterations: 1}})
	if err != nil || r.Version != created.Version+1 || r.Status != "on" || r.Counters.Iterations != 1 {
		t.Fatalf("status patch: %+v, %v", r, err)
	}
	sent("a status patch that lands", 1, 0)

	_, err = s.PatchRun(ctx, "acme", "r", contract.Patch{Status: "stale", Fence: 9, Counters: contract.Counters{Iterations: 1}})
	var sf *contract.StaleFenceError
	if !errors.As(err, &sf) || sf.Fence != 9 || sf.Stored != 10 {
		t.Fatalf("status patch under fence 9: %v, want a *StaleFenceError 9 < 10", err)
	}
	sent("a status patch below the fence", 1, 1)

	_, err = s.PatchRun(ctx, "acme", "r", contract.Patch{Status: "big", Fence: 10, Counters: contract.Counters{Iterations: 1<<63 - 1}})
	var co *contract.CounterOverflowError
	if !errors.As(err, &co) || co.Counter != "Iterations" {
		t.Fatalf("status patch past the range: %v, want a *CounterOverflowError naming Iterations", err)
	}
	sent("a status patch past the range", 1, 1)

	if _, err := s.PatchRun(ctx, "acme", "nobody", contract.Patch{Status: "on"}); !errors.Is(err, contract.ErrNotFound) {
		t.Fatalf("status patch of a missing run: %v, want ErrNotFound", err)
	}
	sent("a status patch of a missing run", 1, 1)

	if got, err := s.GetRun(ctx, "acme", "r"); err != nil || got.Version != r.Version || got.Status != "on" || got.Counters.Iterations != 1 {
		t.Fatalf("run after the refusals: %+v, %v; want it as the landed patch left it", got, err)
	}
	if n := countVersions(t, d, "acme", "r"); n != 1 {
		t.Fatalf("%d versions kept, want the 1 of the landed patch", n)
	}
}

// A store that keeps versions remembers the Version its writes left each
// run at, so the patch it expects to be the run's turn to prune carries
// the prune in its own statement and none is sent after it; the turn
// cuts the versions to the policy's count whatever the patch keeps (a
// new status keeps one, the same status or counters alone none, and the
// statement's own snapshot sees them all then). A patch whose store
// expected a turn that was not one (another store wrote the run in
// between) prunes nothing, and the patch on the real turn, unexpected,
// prunes after it as before. Inside a caller's transaction the carried
// prune commits with the patch.
func TestPatchPrunesInItsStatement(t *testing.T) {
	ctx := ctxT(t, time.Minute)
	tr := &statementCounter{}
	d := newTestDB(t, withMaxConns(1), func(c *pgxpool.Config) { c.ConnConfig.Tracer = tr })
	sql := pgstore.PruneStatements(pgstore.StateTables{})
	policy := contract.RunPolicy{KeepVersions: 2}
	s := stateWith(t, d, nil, policy)
	r := mustPut(t, s, contract.Run{Tenant: "acme", ID: "r", Status: "new"})
	// The patches to versions 8, 16, 24 and 32 are the turns: a status
	// change, the same status, counters only, and a status change again.
	patches := map[int64]contract.Patch{
		pgstore.PruneEvery:     {Status: "turn"},
		2 * pgstore.PruneEvery: {Status: "same"},
		3 * pgstore.PruneEvery: {Counters: contract.Counters{Iterations: 1}},
	}
	for r.Version < 4*pgstore.PruneEvery {
		next := r.Version + 1
		p, ok := patches[next]
		switch {
		case ok:
		case next == 2*pgstore.PruneEvery-1:
			p = contract.Patch{Status: "same"}
		default:
			p = contract.Patch{Status: fmt.Sprint("s", next)}
		}
		var err error
		if r, err = s.PatchRun(ctx, "acme", "r", p); err != nil {
			t.Fatal(err)
		}
		if r.Version != next {
			t.Fatalf("a patch left version %d, want %d", r.Version, next)
		}
		turn := next%pgstore.PruneEvery == 0
		if carried := tr.take(sql.StatusPatch) + tr.take(sql.CounterPatch); carried != map[bool]int{true: 1}[turn] {
			t.Fatalf("the patch to version %d sent %d statements carrying the prune", next, carried)
		}
		if after := tr.take(sql.Async) + tr.take(sql.Bound); after != 0 {
			t.Fatalf("the patch to version %d sent %d prunes after it, want none", next, after)
		}
		if n := countVersions(t, d, "acme", "r"); turn && n != 2 {
			t.Fatalf("%d versions stored after the patch to version %d (a turn), want 2", n, next)
		}
	}
	if got := versionsOf(listAll(t, s, "acme", "r", 10)); fmt.Sprint(got) != "[32 31 30]" {
		t.Fatalf("versions listed %v, want [32 31 30]", got)
	}

	// Another store writes the run on to version 39: s still expects
	// the turn at 33, so its patch to 40 is not expected and prunes after.
	other := stateWith(t, d, nil, policy)
	for r.Version < 5*pgstore.PruneEvery-1 {
		var err error
		if r, err = other.PatchRun(ctx, "acme", "r", contract.Patch{Status: fmt.Sprint("o", r.Version)}); err != nil {
			t.Fatal(err)
		}
	}
	tr.take(sql.Async)
	if r, err := s.PatchRun(ctx, "acme", "r", contract.Patch{Status: "back"}); err != nil || r.Version != 5*pgstore.PruneEvery {
		t.Fatalf("patch to the turn: %+v, %v", r, err)
	}
	if carried, after := tr.take(sql.StatusPatch), tr.take(sql.Async); carried != 0 || after != 1 {
		t.Fatalf("the unexpected turn sent %d statements carrying the prune and %d prunes after it, want 0 and 1", carried, after)
	}
	if n := countVersions(t, d, "acme", "r"); n != 2 {
		t.Fatalf("%d versions stored after the unexpected turn, want 2", n)
	}

	// In a caller's transaction: the turn's patch carries the prune, and a
	// rollback undoes both.
	tx, err := d.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	b := s.Bound(tx)
	for range pgstore.PruneEvery {
		if r, err = b.PatchRun(ctx, "acme", "r", contract.Patch{Status: fmt.Sprint("b", r.Version)}); err != nil {
			t.Fatal(err)
		}
	}
	if carried, after := tr.take(sql.StatusPatch), tr.take(sql.Bound)+tr.take(sql.Async); r.Version != 6*pgstore.PruneEvery || carried != 1 || after != 0 {
		t.Fatalf("bound patches to version %d sent %d statements carrying the prune and %d after, want version %d, 1 and 0", r.Version, carried, after, 6*pgstore.PruneEvery)
	}
	var n int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM adk_runs_versions WHERE tenant = 'acme' AND id = 'r'`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("%d versions in the transaction after its turn, %v; want 2", n, err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if n := countVersions(t, d, "acme", "r"); n != 2 {
		t.Fatalf("%d versions after the rollback, want the 2 before it", n)
	}
	if got, err := s.GetRun(ctx, "acme", "r"); err != nil || got.Version != 5*pgstore.PruneEvery {
		t.Fatalf("run after the rollback: %+v, %v; want version %d", got, err, 5*pgstore.PruneEvery)
	}
}
