package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/adkit/adk/modules/contract"
)

// Queues lists the names of the queues that hold any item, sorted.
func (q *workQueue) Queues(ctx context.Context) ([]string, error) {
	names := []string{}
	err := q.db.read(ctx, func(ctx context.Context, e execer) error {
		rows, err := e.QueryContext(ctx, inspectQueuesSQL)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var n string
			if err := rows.Scan(&n); err != nil {
				return err
			}
			names = append(names, n)
		}
		return rows.Err()
	})
	return names, queueErr(ctx, err)
}

// Tenants returns the counts of every tenant that holds items in the
// queue, has been served by it or is paused in it, by tenant name.
func (q *workQueue) Tenants(ctx context.Context, name string) ([]contract.TenantStats, error) {
	now := nanos(q.clock.Now())
	byName := map[string]*contract.TenantStats{}
	err := q.db.read(ctx, func(ctx context.Context, e execer) error {
		rows, err := e.QueryContext(ctx, inspectTenantsSQL, name, now)
		if err != nil {
			return err
		}
		for rows.Next() {
			var st contract.TenantStats
			var oldest sql.NullInt64
			if err := rows.Scan(&st.Tenant, &st.Ready, &st.Later, &st.Leased, &st.Dead, &st.Waiting, &st.Cancelled, &oldest); err != nil {
				rows.Close()
				return err
			}
			if oldest.Valid {
				st.OldestReady = fromNanos(oldest.Int64)
			}
			byName[st.Tenant] = &st
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		rows, err = e.QueryContext(ctx, inspectServedSQL, name)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var t string
			var served int64
			if err := rows.Scan(&t, &served); err != nil {
				return err
			}
			st := byName[t]
			if st == nil {
				st = &contract.TenantStats{Tenant: t}
				byName[t] = st
			}
			st.Served = served
		}
		if err := rows.Err(); err != nil {
			return err
		}
		_, paused, err := pauses(ctx, e, name)
		for _, t := range paused {
			st := byName[t]
			if st == nil {
				st = &contract.TenantStats{Tenant: t}
				byName[t] = st
			}
			st.Paused = true
		}
		return err
	})
	if err != nil {
		return nil, queueErr(ctx, err)
	}
	out := make([]contract.TenantStats, 0, len(byName))
	for _, st := range byName {
		out = append(out, *st)
	}
	slices.SortFunc(out, func(a, b contract.TenantStats) int { return strings.Compare(a.Tenant, b.Tenant) })
	return out, nil
}

// Rotation returns the queue's tenants with queued work, next to be
// served first, and its last n turns.
func (q *workQueue) Rotation(ctx context.Context, name string, n int) (contract.Rotation, error) {
	now := nanos(q.clock.Now())
	out := contract.Rotation{Order: []string{}, Recent: []contract.Turn{}}
	err := q.db.read(ctx, func(ctx context.Context, e execer) error {
		rows, err := e.QueryContext(ctx, inspectOrderSQL, name, now)
		if err != nil {
			return err
		}
		for rows.Next() {
			var t string
			if err := rows.Scan(&t); err != nil {
				rows.Close()
				return err
			}
			out.Order = append(out.Order, t)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		rows, err = e.QueryContext(ctx, inspectRecentSQL, name, n)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var t contract.Turn
			var at int64
			if err := rows.Scan(&t.Tenant, &t.ID, &t.Worker, &at); err != nil {
				return err
			}
			t.At = fromNanos(at)
			out.Recent = append(out.Recent, t)
		}
		return rows.Err()
	})
	if err != nil {
		return contract.Rotation{}, queueErr(ctx, err)
	}
	slices.Reverse(out.Recent)
	return out, nil
}

// Leases pages through the queue's leases, soonest expiry first.
func (q *workQueue) Leases(ctx context.Context, name string, page contract.PageRequest) (contract.LeasePage, error) {
	limit := page.Limit
	afterExp, afterTok, err := parseLeaseCursor(page.Cursor)
	if err != nil {
		return contract.LeasePage{}, err
	}
	out := contract.LeasePage{Leases: []contract.Lease{}}
	err = q.db.read(ctx, func(ctx context.Context, e execer) error {
		rows, err := e.QueryContext(ctx, inspectLeasesSQL, name, afterExp, afterTok, limit+1)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			l, err := scanLease(rows)
			if err != nil {
				return err
			}
			out.Leases = append(out.Leases, l)
		}
		return rows.Err()
	})
	if err != nil {
		return contract.LeasePage{}, queueErr(ctx, err)
	}
	if len(out.Leases) > limit {
		out.Leases = out.Leases[:limit]
		last := out.Leases[limit-1]
		out.Next = strconv.FormatInt(nanos(last.ExpiresAt), 10) + "." + strconv.FormatInt(last.Token, 10)
	}
	return out, nil
}

func parseLeaseCursor(c string) (int64, int64, error) {
	if c == "" {
		return math.MinInt64, math.MinInt64, nil
	}
	ns, tok, ok := strings.Cut(c, ".")
	if !ok {
		return 0, 0, badCursor()
	}
	n, err1 := strconv.ParseInt(ns, 10, 64)
	t, err2 := strconv.ParseInt(tok, 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, badCursor()
	}
	return n, t, nil
}

// Item returns one item and, when it is leased, its lease.
func (q *workQueue) Item(ctx context.Context, key contract.ItemKey) (contract.ItemInfo, error) {
	var info contract.ItemInfo
	err := q.db.read(ctx, func(ctx context.Context, e execer) error {
		it, l, err := scanItem(e.QueryRowContext(ctx, inspectItemSQL, key.Queue, key.Tenant, key.ID))
		if errors.Is(err, sql.ErrNoRows) {
			return contract.ErrNotFound
		}
		info = contract.ItemInfo{Item: it, Lease: l}
		return err
	})
	if err != nil {
		return contract.ItemInfo{}, queueErr(ctx, err)
	}
	return info, nil
}

// DeadLetterSummary counts the dead letters f matches, by error group.
func (q *workQueue) DeadLetterSummary(ctx context.Context, f contract.DeadLetterFilter, groups int) (contract.DeadLetterSummary, error) {
	var out contract.DeadLetterSummary
	err := q.db.read(ctx, func(ctx context.Context, e execer) error {
		if groups == 0 && f.ID == "" && f.ErrorContains == "" {
			out = contract.DeadLetterSummary{Groups: []contract.DeadLetterGroup{}}
			return e.QueryRowContext(ctx, deadCountSQL, f.Queue, f.Tenant).Scan(&out.Total)
		}
		tally := contract.NewErrorTally(groups)
		err := deadMatching(ctx, e, f, false, nil, func(d deadLetter) bool {
			tally.Add(d.item.LastError, d.item.DeadAt)
			return true
		})
		out = tally.Summary()
		return err
	})
	if err != nil {
		return contract.DeadLetterSummary{}, queueErr(ctx, err)
	}
	return out, nil
}

// walWarnBytes is the WAL size past which Health warns: a WAL that keeps
// growing means checkpoints cannot finish (a reader holds an old
// snapshot) and every read walks a longer log.
const walWarnBytes = 64 << 20

// Health reports the file's settings (journal mode, synchronous level,
// busy timeout, schema), its size (page count, free pages), the
// write-ahead log's size and checkpoint lag, and the busy waits the
// backing's writes have met. The checkpoint lag comes from a PASSIVE
// checkpoint, which copies what it can from the log into the database
// without waiting for anyone and changes no row.
func (q *workQueue) Health(ctx context.Context) (contract.Health, error) {
	h := contract.Health{Backing: "sqlite", Details: map[string]string{}}
	verdict := contract.HealthCheck{Name: "schema and settings (verify)", Value: "ok", Status: contract.HealthOK}
	if err := Verify(ctx, q.db.sql, q.settings); err != nil {
		var se *contract.SchemaError
		var pe *contract.PreflightError
		switch {
		case errors.As(err, &se):
			verdict = contract.HealthCheck{Name: "schema (verify)", Value: se.Object + " is " + se.Found, Status: contract.HealthFail, Fix: se.Fix}
		case errors.As(err, &pe):
			verdict = contract.HealthCheck{Name: pe.Setting, Value: pe.Value, Status: contract.HealthFail, Fix: pe.Fix}
		default:
			return contract.Health{}, queueErr(ctx, err)
		}
	}
	h.Checks = append(h.Checks, verdict)
	c, err := q.db.sql.Conn(ctx)
	if err != nil {
		return contract.Health{}, queueErr(ctx, err)
	}
	defer c.Close()
	var (
		pageSize, pages, free, sync int64
		busyLog, logFrames, copied  int64
		file                        string
	)
	for _, p := range []struct {
		sql  string
		dest []any
	}{
		{"PRAGMA page_size", []any{&pageSize}},
		{"PRAGMA page_count", []any{&pages}},
		{"PRAGMA freelist_count", []any{&free}},
		{"PRAGMA synchronous", []any{&sync}},
		{"PRAGMA wal_checkpoint(PASSIVE)", []any{&busyLog, &logFrames, &copied}},
		{"SELECT file FROM pragma_database_list WHERE name = 'main'", []any{&file}},
	} {
		if err := c.QueryRowContext(ctx, p.sql).Scan(p.dest...); err != nil {
			return contract.Health{}, queueErr(ctx, err)
		}
	}
	durability := contract.HealthCheck{Name: "synchronous", Value: "FULL", Status: contract.HealthOK}
	if sync < 2 {
		durability = contract.HealthCheck{Name: "synchronous", Value: "NORMAL", Status: contract.HealthWarn,
			Fix: "a power cut can roll back the last acknowledged writes and reissue their fencing tokens; chosen with Settings.Durability = DurabilityNormal, keep DurabilityFull where that matters"}
	}
	h.Checks = append(h.Checks, durability)
	var walBytes int64
	if file != "" {
		if st, err := os.Stat(file + "-wal"); err == nil {
			walBytes = st.Size()
		}
	}
	wal := contract.HealthCheck{Name: "wal size", Value: byteSize(walBytes), Status: contract.HealthOK}
	if walBytes > walWarnBytes {
		wal.Status = contract.HealthWarn
		wal.Fix = "a long-lived read (an open transaction or an unclosed rows) keeps checkpoints from finishing; find and end it, then the log is reused"
	}
	h.Checks = append(h.Checks, wal)
	lag := max(logFrames-copied, 0)
	lagCheck := contract.HealthCheck{Name: "checkpoint lag", Value: strconv.FormatInt(lag, 10) + " frames", Status: contract.HealthOK}
	if logFrames < 0 {
		lagCheck.Value = "unknown: not in WAL mode"
		lagCheck.Status = contract.HealthFail
	} else if lag > 10_000 {
		lagCheck.Status = contract.HealthWarn
		lagCheck.Fix = "a reader's snapshot holds frames the checkpoint cannot copy back; end long transactions"
	}
	h.Checks = append(h.Checks, lagCheck)
	st := q.db.stats.snapshot()
	busy := contract.HealthCheck{Name: "busy waits", Value: strconv.FormatInt(q.db.stats.busyWaits.Load(), 10), Status: contract.HealthOK}
	if n := q.db.stats.busyFailed.Load(); n > 0 {
		busy.Status = contract.HealthWarn
		busy.Value += fmt.Sprintf(" (%d gave up after the busy timeout)", n)
		busy.Fix = "another process holds the write lock longer than Settings.BusyTimeout: shorten its transactions or raise the timeout"
	}
	h.Checks = append(h.Checks, busy)
	h.Details["file"] = file
	h.Details["page size"] = byteSize(pageSize)
	h.Details["page count"] = strconv.FormatInt(pages, 10)
	h.Details["database size"] = byteSize(pages * pageSize)
	h.Details["freelist pages"] = strconv.FormatInt(free, 10)
	h.Details["wal frames"] = strconv.FormatInt(max(logFrames, 0), 10)
	h.Details["busy wait time"] = time.Duration(q.db.stats.busyNanos.Load()).String()
	h.Details["writes"] = strconv.FormatInt(q.db.stats.writes.Load(), 10)
	h.Details["in-process write waits"] = strconv.FormatInt(q.db.stats.gateWaits.Load(), 10)
	h.Details["wakes"] = strconv.FormatInt(st.Wakes, 10)
	h.Details["schema version"] = strconv.Itoa(SchemaVersion)
	h.Details["max value bytes"] = strconv.Itoa(q.settings.MaxValueBytes)
	h.Details["max attempts"] = strconv.Itoa(q.settings.Policy.Attempts())
	var queued, leased, dead, waiting, cancelled int64
	if err := c.QueryRowContext(ctx, healthCountsSQL).Scan(&queued, &leased, &dead, &waiting, &cancelled); err == nil {
		h.Details["items queued"] = strconv.FormatInt(queued, 10)
		h.Details["items leased"] = strconv.FormatInt(leased, 10)
		h.Details["items dead"] = strconv.FormatInt(dead, 10)
		h.Details["items waiting"] = strconv.FormatInt(waiting, 10)
		h.Details["items cancelled"] = strconv.FormatInt(cancelled, 10)
	}
	return h, nil
}

func byteSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return strconv.FormatInt(n, 10) + " B"
}

// Stats returns the backing's counters: PoolWaits counts writes that
// waited for the file's write lock held by another connection (another
// process, or another backing on the file), PoolAcquires every write
// transaction, PoolExhausted the writes that gave up after the busy
// timeout; Wakes counts the wakes sent to subscribers.
func (q *workQueue) Stats() contract.Stats { return q.db.stats.snapshot() }

func (c *counters) snapshot() contract.Stats {
	st := contract.Stats{
		PoolAcquires:  c.writes.Load(),
		PoolWaits:     c.busyWaits.Load(),
		PoolExhausted: c.busyFailed.Load(),
		Wakes:         c.wakes.Load(),
	}
	if n := c.lastWake.Load(); n != 0 {
		st.LastWake = time.Unix(0, n).UTC()
	}
	return st
}
