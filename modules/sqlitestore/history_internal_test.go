package sqlitestore

import (
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/policy"
)

// A queue without a retention writes nothing of history: lives of
// enqueue, claim, heartbeat and complete, and of a fail to the dead
// letter and a purge, leave no row in the history tables and no
// completed item.
func TestZeroRetentionWritesNoHistory(t *testing.T) {
	ctx := t.Context()
	db, err := OpenDB(filepath.Join(t.TempDir(), "adk.db"), Settings{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	q, err := OpenQueue(ctx, db, nil, Settings{Policy: policy.Policy{MaxAttempts: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Enqueue(ctx, contract.Item{Tenant: "t", ID: "a"}, contract.Item{Tenant: "t", ID: "b"}); err != nil {
		t.Fatal(err)
	}
	ls, err := q.Claim(ctx, contract.ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 2})
	if err != nil || len(ls) != 2 {
		t.Fatalf("Claim = %v, %v", ls, err)
	}
	l, err := q.Heartbeat(ctx, ls[0], time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Complete(ctx, l); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Fail(ctx, ls[1], errors.New("x")); err != nil {
		t.Fatal(err)
	}
	if n, err := q.Purge(ctx, contract.DeadLetterFilter{Queue: contract.DefaultQueue}); err != nil || n != 1 {
		t.Fatalf("Purge = %d, %v", n, err)
	}
	for _, table := range []string{"adk_work", "adk_retention", "adk_events", "adk_event_log"} {
		var n int
		if err := db.QueryRow("SELECT count(*) FROM " + table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("%s holds %d rows after a life on a queue without retention, want 0", table, n)
		}
	}
}

// Find, Prune, Finished and the queue log read their indexes, never the
// whole table.
func TestHistoryReadsUseIndexes(t *testing.T) {
	ctx := t.Context()
	db, err := OpenDB(filepath.Join(t.TempDir(), "adk.db"), Settings{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := Prepare(ctx, db, Settings{}); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		text string
		args []any
	}{
		"find":           {findIDSQL, []any{"q", "id", 10}},
		"prune":          {pruneScanSQL, []any{"q", 0, "", "", 10}},
		"prune windows":  {pruneUniqueSQL, []any{"q", 0, 10}},
		"finished older": {finishedOlderSQL, []any{"q", 0, "", "", "", "", "", 0, 0, 10}},
		"finished newer": {finishedNewerSQL, []any{"q", 0, "", "", "", "", "", 0, 0, 10}},
		"log":            {logReadSQL, []any{"q", 0, 10}},
		"events":         {eventsItemSQL, []any{"q", "t", "i"}},
	} {
		rows, err := db.QueryContext(ctx, "EXPLAIN QUERY PLAN "+c.text, c.args...)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		p := strings.Join(plan, "; ")
		if !strings.Contains(p, "INDEX") && !strings.Contains(p, "PRIMARY KEY") {
			t.Errorf("%s reads no index: %s", name, p)
		}
		t.Logf("%s: %s", name, p)
	}
}

// The queue's log keeps its latest contract.QueueEventLog events and says
// when a reader's cursor fell behind them. It is trimmed every
// logTrimStep numbers: written a few events at a time, it never holds
// more than its latest contract.QueueEventLog and logTrimStep older ones,
// which QueueEvents does not return.
func TestQueueLogTrimmedInSteps(t *testing.T) {
	ctx := t.Context()
	db, err := OpenDB(filepath.Join(t.TempDir(), "adk.db"), Settings{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	q, err := OpenQueue(ctx, db, nil, Settings{})
	if err != nil {
		t.Fatal(err)
	}
	if err := q.SetRetention(ctx, "", contract.Retention{Events: 1}); err != nil {
		t.Fatal(err)
	}
	start, err := q.QueueEvents(ctx, "", "", 10)
	if err != nil || len(start.Events) != 0 || start.Next == "" {
		t.Fatalf("QueueEvents of an empty log = %+v, %v", start, err)
	}
	rows := func() int {
		var n int
		if err := db.QueryRow("SELECT count(*) FROM adk_event_log").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	total, most := 0, 0
	for total < contract.QueueEventLog+3*logTrimStep {
		batch := 37
		if total == 0 {
			batch = contract.QueueEventLog - 2*logTrimStep // the first ones at once
		}
		items := make([]contract.Item, batch)
		for i := range items {
			items[i] = contract.Item{Tenant: "t", ID: "i" + strconv.Itoa(total+i)}
		}
		if err := q.Enqueue(ctx, items...); err != nil {
			t.Fatal(err)
		}
		total += batch
		if total > contract.QueueEventLog {
			most = max(most, rows())
		}
	}
	if most > contract.QueueEventLog+logTrimStep || most <= contract.QueueEventLog {
		t.Errorf("the log held up to %d entries; want more than %d (trimmed in steps) and at most %d", most, contract.QueueEventLog, contract.QueueEventLog+logTrimStep)
	}
	p, err := q.QueueEvents(ctx, "", "", 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Events) != 1 || p.Events[0].ID != "i"+strconv.Itoa(total-contract.QueueEventLog) {
		t.Fatalf("QueueEvents from the oldest = %+v; want the oldest of the latest %d, i%d", p.Events, contract.QueueEventLog, total-contract.QueueEventLog)
	}
	fromStart, err := q.QueueEvents(ctx, "", start.Next, 1)
	if err != nil || !fromStart.Gap || len(fromStart.Events) != 1 || fromStart.Events[0].ID != p.Events[0].ID {
		t.Fatalf("QueueEvents from the empty log's cursor = gap %v, %+v, %v; want a gap, then %s", fromStart.Gap, fromStart.Events, err, p.Events[0].ID)
	}
	if _, err := q.QueueEvents(ctx, "", "bogus", 10); err == nil {
		t.Fatal("a bad cursor was taken")
	}
	// A cursor inside the untrimmed older entries is behind the log.
	behind, err := q.QueueEvents(ctx, "", "e"+strconv.Itoa(total-contract.QueueEventLog-2), 1)
	if err != nil || !behind.Gap || len(behind.Events) != 1 || behind.Events[0].ID != p.Events[0].ID {
		t.Fatalf("QueueEvents from a cursor behind the latest %d = gap %v, %+v, %v; want a gap, then %s", contract.QueueEventLog, behind.Gap, behind.Events, err, p.Events[0].ID)
	}
}
