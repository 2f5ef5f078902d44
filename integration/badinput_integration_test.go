//go:build integration

package integration

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/contract/memstore"
	"github.com/adkit/adk/modules/pgstore"
	"github.com/adkit/adk/modules/pgstore/pgstoretest"
	"github.com/adkit/adk/modules/policy"
	"github.com/adkit/adk/modules/redisstore"
	"github.com/adkit/adk/modules/redisstore/redistest"
	"github.com/adkit/adk/modules/sqlitestore"
)

// backing is one store under the bad-input table.
type backing struct {
	name  string
	state contract.StateStore
	queue contract.WorkQueue
	in    contract.Inspector
	// raw fingerprints everything the backing holds, below the API: every
	// key of the namespace, every row of the schema.
	raw func(ctx context.Context) (string, error)
	// pool is the PostgreSQL pool, for the NOTIFY row.
	pool *pgxpool.Pool
	// extra are refusals only this backing has.
	extra []badCase
	// clock is the fake clock every backing of the set reads.
	clock *contracttest.FakeClock
}

// The names every backing must keep apart: ':' and braces are valid in
// tenants and ids, and a tenant "a:b" must never meet tenant "a" holding
// id "b:x".
var hostile = []struct{ tenant, id string }{
	{"a:b", "x"}, {"a", "b:x"}, {"{x}", "y"}, {"x", "{y}"}, {"{x}:y", "z"}, {"ünï", "ĉödé"}, {"a b", "c d"},
}

func backingsUnderTest(t *testing.T) []backing {
	t.Helper()
	clock := contracttest.NewFakeClock(time.Time{})
	pol := policy.Policy{MaxAttempts: 3, Jitter: policy.Fixed(0)}
	var out []backing

	mem := memstore.New(clock, memstore.Settings{Policy: pol})
	out = append(out, backing{name: "memstore", state: mem, queue: mem, in: mem})

	opt, err := redis.ParseURL(RedisURL(t))
	if err != nil {
		t.Fatalf("%s: %v", RedisEnv, err)
	}
	rc := redis.NewClient(opt)
	t.Cleanup(func() { _ = rc.Close() })
	ns := redistest.Namespace(t, rc)
	rs, err := redisstore.NewState(rc, clock, redisstore.Settings{Namespace: ns, Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	rq, err := redisstore.NewQueue(rc, clock, redisstore.Settings{Namespace: ns, Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rq.Close() })
	out = append(out, backing{name: "redisstore", state: rs, queue: rq, in: rq,
		raw: func(ctx context.Context) (string, error) { return redisFingerprint(ctx, rc, ns) },
		extra: []badCase{{name: "namespace with braces", call: func(ctx context.Context, b backing) error {
			_, err := redisstore.NewQueue(rc, clock, redisstore.Settings{Namespace: "adk}{x"})
			return err
		}}},
	})

	dsn := PostgresDSN(t)
	schema := pgstoretest.TestSchema(t, dsn, nil)
	pool := schema.Pool(t, func(c *pgxpool.Config) {
		c.MaxConns = 4
		c.ConnConfig.ConnectTimeout = 3 * time.Second
	})
	ps, err := pgstore.NewState(pool, clock, pgstore.Settings{Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	pq, err := pgstore.NewQueue(pool, clock, pgstore.Settings{Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, backing{name: "pgstore", state: ps, queue: pq, in: pq, pool: pool,
		raw: func(ctx context.Context) (string, error) { return pgFingerprint(ctx, pool) },
		extra: []badCase{
			{name: "9 KB NOTIFY", call: func(ctx context.Context, b backing) error {
				// A listener on the channel must hear nothing: the refusal
				// comes before the round trip.
				const channel = "adk_badinput"
				l, err := pgstore.NewListener(schema.ConnConfig(t), pgstore.ListenerSettings{})
				if err != nil {
					return err
				}
				heard, stop := l.Subscribe(channel)
				defer stop()
				if err := l.Start(ctx); err != nil {
					return err
				}
				defer l.Close()
				if err := l.Listen(ctx, channel); err != nil {
					return err
				}
				nerr := pgstore.Notify(ctx, b.pool, channel, strings.Repeat("n", 9000))
				var tooLarge *pgstore.PayloadTooLargeError
				if nerr != nil && !errors.As(nerr, &tooLarge) {
					return fmt.Errorf("want *pgstore.PayloadTooLargeError, got %T: %w", nerr, nerr)
				}
				select {
				case n := <-heard:
					return fmt.Errorf("a refused NOTIFY was delivered (%d bytes)", len(n.Payload))
				case <-time.After(300 * time.Millisecond):
				}
				// ...while it does hear a NOTIFY that fits.
				if err := pgstore.Notify(ctx, b.pool, channel, "fits"); err != nil {
					return err
				}
				select {
				case n := <-heard:
					if n.Payload != "fits" {
						return fmt.Errorf("the listener heard %q, want %q", n.Payload, "fits")
					}
				case <-time.After(5 * time.Second):
					return errors.New("the listener heard nothing, not even a NOTIFY that fits")
				}
				return nerr
			}},
			{name: "NOTIFY on a channel with a NUL byte", call: func(ctx context.Context, b backing) error {
				return pgstore.Notify(ctx, b.pool, "adk\x00work", "x")
			}},
			{name: "table name that is not an identifier", call: func(ctx context.Context, b backing) error {
				_, err := pgstore.NewState(pool, clock, pgstore.Settings{Tables: pgstore.StateTables{Runs: "runs; drop table adk_work"}})
				return err
			}},
			{name: "quoted table name", call: func(ctx context.Context, b backing) error {
				_, err := pgstore.NewQueue(pool, clock, pgstore.Settings{Tables: pgstore.StateTables{Work: `"Work"`}})
				return err
			}},
			{name: "schema-qualified table name", call: func(ctx context.Context, b backing) error {
				_, err := pgstore.Schema(pgstore.StateTables{Turns: "public.turns"})
				return err
			}},
		},
	})

	sqlitePath := filepath.Join(t.TempDir(), "adk.db")
	sdb, err := sqlitestore.OpenDB(sqlitePath, sqlitestore.Settings{Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sdb.Close() })
	if err := sqlitestore.Prepare(t.Context(), sdb, sqlitestore.Settings{}); err != nil {
		t.Fatal(err)
	}
	ss, err := sqlitestore.NewState(sdb, clock, sqlitestore.Settings{Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	sq, err := sqlitestore.NewQueue(sdb, clock, sqlitestore.Settings{Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, backing{name: "sqlitestore", state: ss, queue: sq, in: sq,
		raw: func(ctx context.Context) (string, error) { return sqliteFingerprint(ctx, sdb) },
		extra: []badCase{
			{name: "unknown durability", call: func(ctx context.Context, b backing) error {
				_, err := sqlitestore.NewQueue(sdb, clock, sqlitestore.Settings{Durability: 9})
				return err
			}},
			{name: "bound claim", call: func(ctx context.Context, b backing) error {
				tx, err := sdb.BeginTx(ctx, nil)
				if err != nil {
					return err
				}
				defer tx.Rollback()
				_, err = sq.Bound(tx).Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 1})
				return err
			}},
		},
	})
	for i := range out {
		out[i].clock = clock
	}
	return out
}

// sqliteFingerprint hashes every row of every table of the file.
func sqliteFingerprint(ctx context.Context, db *sql.DB) (string, error) {
	var out []string
	for _, table := range []string{"adk_counters", "adk_runs", "adk_work", "adk_queues", "adk_turns", "adk_recent", "adk_blobs"} {
		rows, err := db.QueryContext(ctx, "SELECT * FROM "+table+" ORDER BY 1, 2")
		if err != nil {
			return "", err
		}
		cols, _ := rows.Columns()
		h := sha256.New()
		n := 0
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				rows.Close()
				return "", err
			}
			fmt.Fprintf(h, "%q\n", vals)
			n++
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return "", err
		}
		out = append(out, fmt.Sprintf("%s %d %s", table, n, hex.EncodeToString(h.Sum(nil))))
	}
	return strings.Join(out, ", "), nil
}

// badCase is one row of the table: a call that must be refused with a
// typed error and change nothing.
type badCase struct {
	name string
	call func(ctx context.Context, b backing) error
	// want checks the error; nil means errors.Is(err, contract.ErrInvalid).
	want func(error) bool
}

func tooLarge(err error) bool {
	var e *contract.StatePersistenceError
	return errors.As(err, &e) && e.Reason == contract.ReasonTooLarge && !e.Retryable()
}

func badCases() []badCase {
	big := contract.DefaultMaxValueBytes + 1
	bigJSON := json.RawMessage(`"` + strings.Repeat("x", big) + `"`)
	lease := contract.Lease{Item: contract.Item{Tenant: "acme", ID: "i1"}, Token: 1}
	put := func(r contract.Run) func(ctx context.Context, b backing) error {
		return func(ctx context.Context, b backing) error { _, err := b.state.PutRun(ctx, r); return err }
	}
	enq := func(items ...contract.Item) func(ctx context.Context, b backing) error {
		return func(ctx context.Context, b backing) error { return b.queue.Enqueue(ctx, items...) }
	}
	claim := func(req contract.ClaimRequest) func(ctx context.Context, b backing) error {
		return func(ctx context.Context, b backing) error { _, err := b.queue.Claim(ctx, req); return err }
	}
	return []badCase{
		{name: "oversized run data", call: put(contract.Run{Tenant: "acme", ID: "big", Data: bigJSON}), want: tooLarge},
		{name: "oversized run data on update", call: put(contract.Run{Tenant: "acme", ID: "r1", Version: 2, Data: bigJSON}), want: tooLarge},
		{name: "oversized payload", call: enq(contract.Item{Tenant: "acme", ID: "big", Payload: make([]byte, big)}), want: tooLarge},
		{name: "empty tenant (run)", call: put(contract.Run{ID: "r"})},
		{name: "empty id (run)", call: put(contract.Run{Tenant: "acme"})},
		{name: "empty tenant (item)", call: enq(contract.Item{ID: "i"})},
		{name: "empty id (item)", call: enq(contract.Item{Tenant: "acme"})},
		{name: "empty tenant (get)", call: func(ctx context.Context, b backing) error { _, err := b.state.GetRun(ctx, "", "r1"); return err }},
		{name: "empty id (patch)", call: func(ctx context.Context, b backing) error {
			_, err := b.state.PatchRun(ctx, "acme", "", contract.Patch{Counters: contract.Counters{Iterations: 1}})
			return err
		}},
		{name: "NUL in tenant", call: put(contract.Run{Tenant: "ac\x00me", ID: "r"})},
		{name: "NUL in id", call: enq(contract.Item{Tenant: "acme", ID: "i\x00"})},
		{name: "NUL in status", call: func(ctx context.Context, b backing) error {
			_, err := b.state.PatchRun(ctx, "acme", "r1", contract.Patch{Status: "do\x00ne", Counters: contract.Counters{Iterations: 1}})
			return err
		}},
		{name: "NUL in queue name", call: enq(contract.Item{Tenant: "acme", ID: "q", Queue: "de\x00fault"})},
		{name: "invalid UTF-8 tenant (run)", call: put(contract.Run{Tenant: "ac\xffme", ID: "r"})},
		{name: "invalid UTF-8 tenant (item)", call: enq(contract.Item{Tenant: "\xc3\x28", ID: "i"})},
		{name: "invalid UTF-8 tenant (list)", call: func(ctx context.Context, b backing) error {
			_, err := b.state.ListRuns(ctx, "\xed\xa0\x80", contract.PageRequest{})
			return err
		}},
		{name: "invalid UTF-8 metadata", call: enq(contract.Item{Tenant: "acme", ID: "m", Metadata: map[string]string{"k": "\xff"}})},
		{name: "tenant over 512 bytes", call: put(contract.Run{Tenant: strings.Repeat("t", contract.MaxNameBytes+1), ID: "r"})},
		{name: "malformed JSON blob", call: put(contract.Run{Tenant: "acme", ID: "j", Data: json.RawMessage(`{"a":`)})},
		{name: "malformed JSON blob on update", call: put(contract.Run{Tenant: "acme", ID: "r1", Version: 2, Data: json.RawMessage(`{'a':1}`)})},
		{name: "negative version", call: put(contract.Run{Tenant: "acme", ID: "r1", Version: -1})},
		{name: "batch with one bad item", call: enq(contract.Item{Tenant: "acme", ID: "good-1"}, contract.Item{Tenant: "acme", ID: ""}, contract.Item{Tenant: "acme", ID: "good-2"})},
		{name: "empty batch", call: enq()},
		{name: "negative lease", call: claim(contract.ClaimRequest{Worker: "w", LeaseFor: -time.Second, Max: 1})},
		{name: "zero lease", call: claim(contract.ClaimRequest{Worker: "w", Max: 1})},
		{name: "claim batch 0", call: claim(contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 0})},
		{name: "claim batch 1,000,000", call: claim(contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 1_000_000})},
		{name: "negative heartbeat extension", call: func(ctx context.Context, b backing) error {
			_, err := b.queue.Heartbeat(ctx, lease, -time.Second)
			return err
		}},
		{name: "page of 100,000", call: func(ctx context.Context, b backing) error {
			_, err := b.state.ListRuns(ctx, "acme", contract.PageRequest{Limit: 100000})
			return err
		}},
		{name: "malformed cursor", call: func(ctx context.Context, b backing) error {
			_, err := b.state.ListRuns(ctx, "acme", contract.PageRequest{Cursor: "\x00not-a-cursor"})
			return err
		}},
		{name: "dead-letter filter with invalid UTF-8", call: func(ctx context.Context, b backing) error {
			_, err := b.queue.Purge(ctx, contract.DeadLetterFilter{Tenant: "\xff"})
			return err
		}},
		{name: "complete with an empty tenant", call: func(ctx context.Context, b backing) error {
			return b.queue.Complete(ctx, contract.Lease{Item: contract.Item{ID: "i1"}, Token: 1})
		}},
	}
}

// TestBadInput runs the table against every backing: each bad call gets a
// typed error, and the store reads the same afterwards, through the API
// and below it.
func TestBadInput(t *testing.T) {
	for _, b := range backingsUnderTest(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			seedKnown(t, ctx, b)
			before := snapshot(t, ctx, b)
			for _, c := range append(badCases(), b.extra...) {
				t.Run(c.name, func(t *testing.T) {
					err := c.call(ctx, b)
					ok := errors.Is(err, contract.ErrInvalid)
					if c.want != nil {
						ok = c.want(err)
					}
					if !ok {
						t.Errorf("got %v (%T), want a typed refusal", err, err)
					}
					if contract.Retryable(err) {
						t.Errorf("bad input reported as retryable: %v", err)
					}
					if after := snapshot(t, ctx, b); after != before {
						t.Errorf("the store changed:\nbefore %s\nafter  %s", before, after)
					}
				})
			}
			hostileNamesRoundTrip(t, ctx, b)
		})
	}
}

// seedKnown writes the state the bad calls must leave alone.
func seedKnown(t *testing.T, ctx context.Context, b backing) {
	t.Helper()
	r, err := b.state.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r1", Session: "s", Status: "open", Data: json.RawMessage(`{"v":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.state.PatchRun(ctx, "acme", "r1", contract.Patch{Counters: contract.Counters{Iterations: 1, CostMicros: 5}}); err != nil {
		t.Fatal(err)
	}
	if r.Version != 1 {
		t.Fatalf("created run has version %d", r.Version)
	}
	if err := b.queue.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "i1", Payload: []byte("p")}); err != nil {
		t.Fatal(err)
	}
}

// snapshot reads what the bad calls could have touched.
func snapshot(t *testing.T, ctx context.Context, b backing) string {
	t.Helper()
	var parts []string
	r, err := b.state.GetRun(ctx, "acme", "r1")
	if err != nil {
		t.Fatal(err)
	}
	parts = append(parts, fmt.Sprintf("run v%d %s %s %+v", r.Version, r.Status, r.Data, r.Counters))
	page, err := b.state.ListRuns(ctx, "acme", contract.PageRequest{})
	if err != nil {
		t.Fatal(err)
	}
	parts = append(parts, fmt.Sprintf("acme runs %d", len(page.Runs)))
	ts, err := b.in.Tenants(ctx, contract.DefaultQueue)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range ts {
		parts = append(parts, fmt.Sprintf("%q ready=%d later=%d leased=%d dead=%d", s.Tenant, s.Ready, s.Later, s.Leased, s.Dead))
	}
	qs, err := b.in.Queues(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(qs)
	parts = append(parts, "queues "+strings.Join(qs, ","))
	info, err := b.in.Item(ctx, contract.ItemKey{Tenant: "acme", Queue: contract.DefaultQueue, ID: "i1"})
	if err != nil {
		t.Fatal(err)
	}
	parts = append(parts, fmt.Sprintf("i1 %s attempts=%d", info.Item.State, info.Item.Attempts))
	if b.raw != nil {
		raw, err := b.raw(ctx)
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, "raw "+raw)
	}
	return strings.Join(parts, "; ")
}

// hostileNamesRoundTrip writes a run and an item under each valid but
// awkward name and reads each back exactly, with no name seeing
// another's.
func hostileNamesRoundTrip(t *testing.T, ctx context.Context, b backing) {
	t.Helper()
	for i, h := range hostile {
		data := json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))
		if _, err := b.state.PutRun(ctx, contract.Run{Tenant: h.tenant, ID: h.id, Data: data}); err != nil {
			t.Fatalf("PutRun %q/%q: %v", h.tenant, h.id, err)
		}
		if _, err := b.state.PatchRun(ctx, h.tenant, h.id, contract.Patch{Counters: contract.Counters{Iterations: int64(i + 1)}}); err != nil {
			t.Fatalf("PatchRun %q/%q: %v", h.tenant, h.id, err)
		}
		if err := b.queue.Enqueue(ctx, contract.Item{Tenant: h.tenant, ID: h.id, Payload: data}); err != nil {
			t.Fatalf("Enqueue %q/%q: %v", h.tenant, h.id, err)
		}
	}
	for i, h := range hostile {
		r, err := b.state.GetRun(ctx, h.tenant, h.id)
		if err != nil {
			t.Fatalf("GetRun %q/%q: %v", h.tenant, h.id, err)
		}
		if want := fmt.Sprintf(`{"n":%d}`, i); string(r.Data) != want || r.Counters.Iterations != int64(i+1) || r.Tenant != h.tenant || r.ID != h.id {
			t.Errorf("%q/%q read back as %q/%q data %s iterations %d; want data %s iterations %d (names collided)", h.tenant, h.id, r.Tenant, r.ID, r.Data, r.Counters.Iterations, want, i+1)
		}
		page, err := b.state.ListRuns(ctx, h.tenant, contract.PageRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Runs) != 1 || page.Runs[0].ID != h.id {
			t.Errorf("ListRuns(%q) = %d runs, want only %q", h.tenant, len(page.Runs), h.id)
		}
	}
	seen := map[string]bool{}
	for {
		ls, err := b.queue.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 100})
		if errors.Is(err, contract.ErrEmpty) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range ls {
			k := l.Item.Tenant + "\x00" + l.Item.ID
			if seen[k] {
				t.Errorf("%q/%q claimed twice", l.Item.Tenant, l.Item.ID)
			}
			seen[k] = true
		}
		if err := b.queue.Complete(ctx, ls...); err != nil {
			t.Fatal(err)
		}
	}
	for i, h := range hostile {
		if !seen[h.tenant+"\x00"+h.id] {
			t.Errorf("item %q/%q (#%d) never claimed", h.tenant, h.id, i)
		}
	}
	if len(seen) != len(hostile)+1 { // + acme/i1
		t.Errorf("claimed %d distinct items, want %d", len(seen), len(hostile)+1)
	}
}

func redisFingerprint(ctx context.Context, c *redis.Client, ns string) (string, error) {
	keys, err := redistest.Keys(ctx, c, ns)
	if err != nil {
		return "", err
	}
	sort.Strings(keys)
	h := sha256.New()
	for _, k := range keys {
		v, err := c.Dump(ctx, k).Result()
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%q=%x\n", k, v)
	}
	return fmt.Sprintf("%d keys %s", len(keys), hex.EncodeToString(h.Sum(nil))[:16]), nil
}

func pgFingerprint(ctx context.Context, pool *pgxpool.Pool) (string, error) {
	var out []string
	for _, table := range []string{"adk_runs", "adk_work", "adk_queue_turns", "adk_blobs"} {
		var n int64
		var sum string
		err := pool.QueryRow(ctx, "SELECT count(*), coalesce(md5(string_agg(t::text, ',' ORDER BY t::text)), '') FROM "+table+" t").Scan(&n, &sum)
		if err != nil {
			return "", err
		}
		out = append(out, fmt.Sprintf("%s %d %s", table, n, sum))
	}
	return strings.Join(out, ", "), nil
}
