package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/adkit/adk/modules/contract"
)

// Queues lists the queue names that hold any item, sorted.
func (q *workQueue) Queues(ctx context.Context) ([]string, error) {
	out := []string{}
	err := q.db.run(ctx, func(ctx context.Context, e Executor) error {
		rows, err := e.Query(ctx, q.q.inspectQueues)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	if out == nil {
		out = []string{}
	}
	return out, queueErr(err)
}

// Tenants returns the counts of every tenant that holds items in the queue
// or has been served by it, by tenant name. Served counts the turns the
// rotation recorded since the tenant's rotation row was created (Reap
// prunes the rows of tenants idle past TurnRetention); a turn bump skipped
// under contention (see the claim) is not counted, so it can trail the
// items actually served.
func (q *workQueue) Tenants(ctx context.Context, name string) ([]contract.TenantStats, error) {
	out := []contract.TenantStats{}
	err := q.db.run(ctx, func(ctx context.Context, e Executor) error {
		out = out[:0]
		rows, err := e.Query(ctx, q.q.inspectTenants, name, q.clock.Now())
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var st contract.TenantStats
			var oldest *time.Time
			if err := rows.Scan(&st.Tenant, &st.Ready, &st.Later, &st.Leased, &st.Dead, &st.Served, &oldest, &st.Waiting, &st.Cancelled, &st.Paused); err != nil {
				return err
			}
			if oldest != nil {
				st.OldestReady = utc(*oldest)
			}
			out = append(out, st)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, queueErr(err)
	}
	return out, nil
}

// Rotation returns the tenants with queued work in turn order, and the
// most recent turns, most recent last. Each tenant's rotation row keeps
// its latest 32 turns, so when a busy tenant took more than 32 of the last
// n turns Recent is cut to the window every tenant's history still covers
// (shorter than n, never with gaps). A turn bump skipped under contention
// is not recorded.
func (q *workQueue) Rotation(ctx context.Context, name string, n int) (contract.Rotation, error) {
	out := contract.Rotation{Order: []string{}, Recent: []contract.Turn{}}
	err := q.db.run(ctx, func(ctx context.Context, e Executor) error {
		rows, err := e.Query(ctx, q.q.inspectOrder, name, q.clock.Now())
		if err != nil {
			return err
		}
		order, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		out.Order = append(out.Order[:0], order...)
		out.Recent = out.Recent[:0]
		if n == 0 {
			return nil
		}
		rows, err = e.Query(ctx, q.q.inspectRecent, name, n)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var t contract.Turn
			if err := rows.Scan(&t.Tenant, &t.ID, &t.Worker, &t.At); err != nil {
				return err
			}
			t.At = utc(t.At)
			out.Recent = append(out.Recent, t)
		}
		return rows.Err()
	})
	if err != nil {
		return contract.Rotation{}, queueErr(err)
	}
	slices.Reverse(out.Recent)
	return out, nil
}

// Leases pages through the queue's live leases, soonest expiry first.
func (q *workQueue) Leases(ctx context.Context, name string, page contract.PageRequest) (contract.LeasePage, error) {
	limit := page.Limit
	afterAt, afterToken, err := parseLeaseCursor(page.Cursor)
	if err != nil {
		return contract.LeasePage{}, err
	}
	out := contract.LeasePage{Leases: []contract.Lease{}}
	err = q.db.run(ctx, func(ctx context.Context, e Executor) error {
		out.Leases = out.Leases[:0]
		rows, err := e.Query(ctx, q.q.inspectLeases, name, afterAt, afterToken, limit+1)
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
		return contract.LeasePage{}, queueErr(err)
	}
	if len(out.Leases) > limit {
		out.Leases = out.Leases[:limit]
		last := out.Leases[limit-1]
		out.Next = strconv.FormatInt(last.ExpiresAt.UnixMicro(), 10) + "." + strconv.FormatInt(last.Token, 10)
	}
	return out, nil
}

func parseLeaseCursor(c string) (time.Time, int64, error) {
	if c == "" {
		return time.UnixMicro(0).Add(-1 << 62), 0, nil
	}
	bad := &contract.ValidationError{Field: "PageRequest.Cursor", Problem: "is not a cursor this listing returned; pass \"\" or the Next of the previous page"}
	us, tok, ok := strings.Cut(c, ".")
	if !ok {
		return time.Time{}, 0, bad
	}
	m, err1 := strconv.ParseInt(us, 10, 64)
	t, err2 := strconv.ParseInt(tok, 10, 64)
	if err1 != nil || err2 != nil {
		return time.Time{}, 0, bad
	}
	return time.UnixMicro(m).UTC(), t, nil
}

// Item returns one item and, when it is leased, its lease.
func (q *workQueue) Item(ctx context.Context, key contract.ItemKey) (contract.ItemInfo, error) {
	var info contract.ItemInfo
	err := q.db.run(ctx, func(ctx context.Context, e Executor) error {
		rows, err := e.Query(ctx, q.q.inspectItem, key.Queue, key.Tenant, key.ID)
		if err != nil {
			return err
		}
		defer rows.Close()
		if !rows.Next() {
			if err := rows.Err(); err != nil {
				return err
			}
			return contract.ErrNotFound
		}
		l, err := scanLease(rows)
		if err != nil {
			return err
		}
		info = contract.ItemInfo{Item: l.Item}
		if l.Item.State == contract.StateLeased {
			info.Lease = &l
		}
		return nil
	})
	return info, queueErr(err)
}

// DeadLetterSummary counts the dead letters f matches and groups the
// largest of them by error, in one statement on the dead-letter index.
func (q *workQueue) DeadLetterSummary(ctx context.Context, f contract.DeadLetterFilter, groups int) (contract.DeadLetterSummary, error) {
	name := f.Queue
	out := contract.DeadLetterSummary{Groups: []contract.DeadLetterGroup{}}
	err := q.db.run(ctx, func(ctx context.Context, e Executor) error {
		out = contract.DeadLetterSummary{Groups: []contract.DeadLetterGroup{}}
		if groups == 0 {
			return e.QueryRow(ctx, q.q.deadCount, name, f.Tenant, f.ID, f.ErrorContains).Scan(&out.Total)
		}
		rows, err := e.Query(ctx, q.q.deadSummary, name, f.Tenant, f.ID, f.ErrorContains, contract.ErrorGroupRunes, groups)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var g contract.DeadLetterGroup
			if err := rows.Scan(&g.Error, &g.Count, &g.LastDeadAt, &out.Total, &out.Distinct); err != nil {
				return err
			}
			g.LastDeadAt = utc(g.LastDeadAt)
			out.Groups = append(out.Groups, g)
		}
		return rows.Err()
	})
	if err != nil {
		return contract.DeadLetterSummary{}, queueErr(err)
	}
	return out, nil
}

// Dead-ratio thresholds of the vacuum health check.
const (
	deadRatioWarn = 0.2
	deadRatioFail = 0.5
)

// Health reports the schema verdict, the connection's statement_timeout,
// the vacuum health of the work table (live and dead tuples, dead ratio,
// last autovacuum, whether the schema's autovacuum settings are still in
// place, index sizes) and the listener's state. It only reads.
func (q *workQueue) Health(ctx context.Context) (contract.Health, error) {
	h := contract.Health{Backing: "postgresql", Details: map[string]string{}}
	err := q.db.run(ctx, func(ctx context.Context, e Executor) error {
		h.Checks = h.Checks[:0]
		verdict := contract.HealthCheck{Name: "schema and settings (verify)", Value: "ok", Status: contract.HealthOK}
		if err := Verify(ctx, e, q.settings.Tables); err != nil {
			var se *contract.SchemaError
			var pe *contract.PreflightError
			switch {
			case errors.As(err, &se):
				verdict = contract.HealthCheck{Name: "schema (verify)", Value: se.Object + " is " + se.Found, Status: contract.HealthFail, Fix: se.Fix}
			case errors.As(err, &pe):
				verdict = contract.HealthCheck{Name: pe.Setting, Value: pe.Value, Status: contract.HealthFail, Fix: pe.Fix}
			default:
				return err
			}
		}
		h.Checks = append(h.Checks, verdict)
		return q.vacuumHealth(ctx, e, &h)
	})
	if err != nil {
		return contract.Health{}, queueErr(err)
	}
	if l := q.settings.Listener; l != nil {
		st := l.Stats()
		c := contract.HealthCheck{Name: "listener", Value: "connected", Status: contract.HealthOK}
		var probeErr *ListenerProbeError
		switch {
		case st.Connected:
		case errors.As(st.Err, &probeErr):
			// Not an outage that ends by itself: this path never delivers.
			c = contract.HealthCheck{Name: "listener", Value: "not delivering: its probe NOTIFY did not come back within " + probeErr.Timeout.String(), Status: contract.HealthFail,
				Fix: probeErr.Fix() + "; until then claimers wake only on their re-poll interval"}
		default:
			c = contract.HealthCheck{Name: "listener", Value: "reconnecting", Status: contract.HealthWarn,
				Fix: "claimers fall back to their re-poll interval until the listener is back; check the server and the connection budget (pool size + 1)"}
		}
		h.Checks = append(h.Checks, c)
		h.Details["listener reconnects"] = strconv.FormatInt(st.Reconnects, 10)
		h.Details["listener probes"] = strconv.FormatInt(st.Probes, 10)
		h.Details["listener probe failures"] = strconv.FormatInt(st.ProbeFailures, 10)
		if st.ProbeRoundTrip > 0 {
			h.Details["listener probe round trip"] = st.ProbeRoundTrip.String()
		}
		h.Details["listener notifications"] = strconv.FormatInt(st.Received, 10)
		h.Details["listener dropped wakes"] = strconv.FormatInt(st.Dropped, 10)
		if !st.LastWake.IsZero() {
			h.Details["listener last wake"] = st.LastWake.Format(time.RFC3339Nano)
		}
	} else {
		h.Details["wakes"] = "poll-only every " + q.settings.PollInterval.String()
	}
	if q.db.pool != nil {
		st := q.db.pool.Stat()
		h.Details["pool size"] = strconv.Itoa(int(st.MaxConns()))
		h.Details["pool in use"] = strconv.Itoa(int(st.AcquiredConns()))
		h.Details["pool waits"] = strconv.FormatInt(st.EmptyAcquireCount(), 10)
	}
	return h, nil
}

func (q *workQueue) vacuumHealth(ctx context.Context, e Executor, h *contract.Health) error {
	work := q.settings.Tables.Work
	var (
		live, dead, autovacuums int64
		lastAuto, lastManual    *time.Time
		relopts                 []string
		total, indexes          int64
		v                       string
	)
	err := e.QueryRow(ctx, q.q.healthWork, work).Scan(&live, &dead, &lastAuto, &lastManual, &autovacuums, &relopts, &total, &indexes)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil // the verdict above already says the table is missing
	}
	if err != nil {
		return err
	}
	// The table's reloptions only matter while autovacuum runs at all:
	// the server-wide switch (and track_counts, without which autovacuum
	// has nothing to go on) is read too, or a server with autovacuum off
	// would show green settings and blame long transactions for the bloat.
	server := map[string]string{"autovacuum": "", "track_counts": ""}
	for k := range server {
		if err := e.QueryRow(ctx, "SHOW "+k).Scan(&v); err == nil {
			server[k] = v
		}
	}
	var off []string
	for _, k := range []string{"autovacuum", "track_counts"} {
		if server[k] == "off" {
			off = append(off, k+" = off (server-wide)")
		}
	}
	if slices.Contains(relopts, "autovacuum_enabled=false") {
		off = append(off, "autovacuum_enabled=false on "+work)
	}

	ratio := 0.0
	if live+dead > 0 {
		ratio = float64(dead) / float64(live+dead)
	}
	rc := contract.HealthCheck{Name: work + " dead ratio", Value: fmt.Sprintf("%.1f%% (%d dead, %d live)", ratio*100, dead, live), Status: contract.HealthOK}
	cause := "look for long-running transactions (they hold back cleanup) and check the reloptions below"
	if off != nil {
		cause = "autovacuum does not run on " + work + " (" + strings.Join(off, ", ") + "): see the autovacuum settings check"
	}
	switch {
	case ratio >= deadRatioFail:
		rc.Status, rc.Fix = contract.HealthFail, "autovacuum is not keeping up: "+cause
		if off == nil {
			rc.Fix += ", and autovacuum_max_workers"
		}
	case ratio >= deadRatioWarn:
		rc.Status, rc.Fix = contract.HealthWarn, "autovacuum is behind: "+cause
	}
	h.Checks = append(h.Checks, rc)

	want := map[string]string{"autovacuum_vacuum_scale_factor": "0.01", "autovacuum_vacuum_cost_delay": "0"}
	var missing []string
	for _, k := range []string{"autovacuum_vacuum_scale_factor", "autovacuum_vacuum_cost_delay"} {
		if !slices.Contains(relopts, k+"="+want[k]) {
			missing = append(missing, k+"="+want[k])
		}
	}
	oc := contract.HealthCheck{Name: work + " autovacuum settings", Value: strings.Join(relopts, ", "), Status: contract.HealthOK}
	if oc.Value == "" {
		oc.Value = "none"
	}
	oc.Value = "autovacuum = " + server["autovacuum"] + ", track_counts = " + server["track_counts"] + "; " + oc.Value
	var fixes []string
	for _, k := range []string{"autovacuum", "track_counts"} {
		if server[k] == "off" {
			fixes = append(fixes, "set "+k+" = on in postgresql.conf (or ALTER SYSTEM SET "+k+" = on; SELECT pg_reload_conf())")
		}
	}
	if slices.Contains(relopts, "autovacuum_enabled=false") {
		fixes = append(fixes, "ALTER TABLE "+work+" RESET (autovacuum_enabled)")
	}
	switch {
	case fixes != nil:
		oc.Status = contract.HealthFail
		oc.Fix = "autovacuum never cleans " + work + ", which every claim and settle rewrites: " + strings.Join(fixes, "; ") + "; until then run VACUUM " + work + " by hand"
		if missing != nil {
			oc.Fix += "; then restore the schema's settings: ALTER TABLE " + work + " SET (" + strings.Join(missing, ", ") + ")"
		}
	case missing != nil:
		oc.Status = contract.HealthWarn
		oc.Fix = "restore the schema's settings: ALTER TABLE " + work + " SET (" + strings.Join(missing, ", ") + ")"
	}
	h.Checks = append(h.Checks, oc)

	last := "never"
	if lastAuto != nil {
		last = lastAuto.UTC().Format(time.RFC3339)
	}
	h.Details[work+" last autovacuum"] = last
	if lastManual != nil {
		h.Details[work+" last vacuum"] = lastManual.UTC().Format(time.RFC3339)
	}
	h.Details[work+" autovacuum runs"] = strconv.FormatInt(autovacuums, 10)
	h.Details[work+" live tuples"] = strconv.FormatInt(live, 10)
	h.Details[work+" dead tuples"] = strconv.FormatInt(dead, 10)
	h.Details[work+" total size"] = strconv.FormatInt(total, 10) + " bytes"
	h.Details[work+" index size"] = strconv.FormatInt(indexes, 10) + " bytes"

	rows, err := e.Query(ctx, q.q.healthIndexes, work)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var size int64
		if err := rows.Scan(&name, &size); err != nil {
			return err
		}
		h.Details["index "+name] = strconv.FormatInt(size, 10) + " bytes"
	}
	var version string
	if err := e.QueryRow(ctx, "SHOW server_version").Scan(&version); err == nil {
		h.Details["server version"] = version
	}
	return rows.Err()
}

// Stats returns the pool counters (when the queue runs on a
// *pgxpool.Pool) and the listener's.
func (q *workQueue) Stats() contract.Stats {
	var st contract.Stats
	if p := q.db.pool; p != nil {
		ps := p.Stat()
		st.PoolAcquires = ps.AcquireCount()
		st.PoolWaits = ps.EmptyAcquireCount()
	}
	st.PoolExhausted = q.db.counters.exhausted.Load()
	if l := q.settings.Listener; l != nil {
		ls := l.Stats()
		st.ListenerReconnects = ls.Reconnects
		st.Wakes = ls.Received + ls.Synthetic
		st.LastWake = ls.LastWake
	}
	return st
}

// Stats returns the pool counters when the store runs on a *pgxpool.Pool.
func (s *PostgresStateStore) Stats() contract.Stats {
	var st contract.Stats
	if p := s.d.db.pool; p != nil {
		ps := p.Stat()
		st.PoolAcquires = ps.AcquireCount()
		st.PoolWaits = ps.EmptyAcquireCount()
	}
	st.PoolExhausted = s.d.db.counters.exhausted.Load()
	return st
}
