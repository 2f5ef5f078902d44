package pgstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/pgstore"
)

func TestStateTablesRefusesBadIdentifiers(t *testing.T) {
	for _, name := range []string{
		"runs; drop table x", `"runs"`, `"Runs"`, "", " ", "runs x", "public.runs", "Runs", "1runs", "runs-1",
		"rüns", "runs\x00", "select", "table", "pg_runs", strings.Repeat("r", pgstore.MaxTableName+1), "runs'--",
	} {
		err := pgstore.StateTables{Runs: name}.Validate()
		if !errors.Is(err, contract.ErrInvalid) {
			t.Errorf("StateTables{Runs: %q}.Validate() = %v, want a validation error", name, err)
		}
		if name == "" {
			continue // an empty field in Settings means the default
		}
		if _, err := pgstore.NewState(fakeExec{t}, nil, pgstore.Settings{Tables: pgstore.StateTables{Runs: name}}); !errors.Is(err, contract.ErrInvalid) {
			t.Errorf("NewState with Runs %q: %v, want a validation error", name, err)
		}
		if _, err := pgstore.NewQueue(fakeExec{t}, nil, pgstore.Settings{Tables: pgstore.StateTables{Work: name}}); !errors.Is(err, contract.ErrInvalid) {
			t.Errorf("NewQueue with Work %q: %v, want a validation error", name, err)
		}
		if _, err := pgstore.Schema(pgstore.StateTables{Turns: name}); !errors.Is(err, contract.ErrInvalid) {
			t.Errorf("Schema with Turns %q: %v, want a validation error", name, err)
		}
	}
	for _, name := range []string{"runs", "adk_runs", "_runs", "runs_2", "my_app_work", strings.Repeat("r", pgstore.MaxTableName)} {
		if err := pgstore.ValidateIdentifier("t", name); err != nil {
			t.Errorf("ValidateIdentifier(%q) = %v, want nil", name, err)
		}
	}
	if err := (pgstore.StateTables{Runs: "same", Work: "same", Turns: "t", Blobs: "b"}).Validate(); !errors.Is(err, contract.ErrInvalid) {
		t.Errorf("two tables with one name: %v, want a validation error", err)
	}
	if err := pgstore.DefaultTables().Validate(); err != nil {
		t.Errorf("DefaultTables: %v", err)
	}
}

func FuzzValidateIdentifier(f *testing.F) {
	for _, s := range []string{"adk_runs", "runs; drop table x", `"q"`, "", "a.b", "select"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if pgstore.ValidateIdentifier("t", name) != nil {
			return
		}
		// Whatever passes needs no quoting and cannot end the statement.
		if (pgx.Identifier{name}).Sanitize() != `"`+name+`"` || strings.ContainsAny(name, " ;'\"-.\x00/*") || name == "" {
			t.Fatalf("ValidateIdentifier accepted %q", name)
		}
		for _, c := range name {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
				t.Fatalf("ValidateIdentifier accepted %q with %q", name, c)
			}
		}
	})
}

func TestSchemaRendersTableNames(t *testing.T) {
	s, err := pgstore.Schema(pgstore.StateTables{Runs: "app_runs", Work: "app_work", Turns: "app_turns", Blobs: "app_blobs"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"CREATE TABLE IF NOT EXISTS app_runs", "CREATE TABLE IF NOT EXISTS app_work", "app_work_ready ON app_work", "app_turns", "app_blobs", "adk_schema"} {
		if !strings.Contains(s, want) {
			t.Errorf("schema lacks %q", want)
		}
	}
	if strings.Contains(s, "{") && strings.Contains(s, "{runs}") {
		t.Error("schema keeps a placeholder")
	}
	for _, want := range []string{"autovacuum_vacuum_scale_factor = 0.01", "autovacuum_vacuum_cost_delay = 0", "fillfactor", "INSERT INTO adk_schema (version) VALUES (6)", "CREATE TABLE IF NOT EXISTS adk_runs_versions", "FUNCTION adk_runs_drop_versions", "CREATE TABLE IF NOT EXISTS adk_work_pauses", "CREATE TABLE IF NOT EXISTS adk_work_retention", "CREATE TABLE IF NOT EXISTS adk_work_events", "CREATE TABLE IF NOT EXISTS adk_work_log", "adk_work_finished", "adk_work_ready_pri", "adk_work_ready_due ON adk_work (queue, tenant, due_at, seq) WHERE state = 'queued' AND priority <> 0",
		"adk_work_ready ON adk_work (queue, tenant, due_at, seq) WHERE state = 'queued' AND priority = 0",
		"CREATE TABLE IF NOT EXISTS adk_work_limits", "CREATE TABLE IF NOT EXISTS adk_work_usage", "FUNCTION adk_work_live_leases"} {
		if !strings.Contains(pgstore.ExpectedSchema, want) {
			t.Errorf("ExpectedSchema lacks %q", want)
		}
	}
	if pgstore.SchemaVersion != 6 {
		t.Errorf("SchemaVersion = %d; the schema file inserts 6", pgstore.SchemaVersion)
	}
	m, err := pgstore.Migration(pgstore.StateTables{Work: "app_work", Turns: "app_turns"}, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ALTER TABLE app_turns", "CREATE TABLE IF NOT EXISTS app_work_limits", "UPDATE adk_schema SET version = 2 WHERE version = 1",
		"CREATE TABLE IF NOT EXISTS app_work_pauses", "UPDATE adk_schema SET version = 3 WHERE version = 2",
		"CREATE TABLE IF NOT EXISTS app_work_retention", "UPDATE adk_schema SET version = 4 WHERE version = 3", "UPDATE adk_schema SET version = 5 WHERE version = 4",
		"UPDATE adk_schema SET version = 6 WHERE version = 5"} {
		if !strings.Contains(m, want) {
			t.Errorf("the migration from version 1 lacks %q", want)
		}
	}
	m2, err := pgstore.Migration(pgstore.StateTables{Work: "app_work", Turns: "app_turns"}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(m2, "version = 2 WHERE version = 1") || !strings.Contains(m2, "ALTER TABLE app_work") || !strings.Contains(m2, "app_work_pauses") || !strings.Contains(m2, "app_work_retention") {
		t.Errorf("the migration from version 2 is not 003_lifecycle.sql then 004_history.sql:\n%s", m2)
	}
	m3, err := pgstore.Migration(pgstore.StateTables{Work: "app_work", Turns: "app_turns"}, 3)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(m3, "version = 3 WHERE version = 2") || !strings.Contains(m3, "app_work_retention") || !strings.Contains(m3, "app_work_finished") {
		t.Errorf("the migration from version 3 is not 004_history.sql then 005_run_versions.sql:\n%s", m3)
	}
	m4, err := pgstore.Migration(pgstore.StateTables{Runs: "app_runs", Work: "app_work", Turns: "app_turns"}, 4)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ALTER TABLE app_runs ADD COLUMN IF NOT EXISTS fence", "CREATE TABLE IF NOT EXISTS app_runs_versions",
		"FUNCTION app_runs_drop_versions", "UPDATE adk_schema SET version = 5 WHERE version = 4"} {
		if !strings.Contains(m4, want) {
			t.Errorf("the migration from version 4 lacks %q", want)
		}
	}
	if strings.Contains(m4, "app_work_retention") || strings.Contains(m4, "{") || !strings.Contains(m4, "UPDATE adk_schema SET version = 6 WHERE version = 5") {
		t.Errorf("the migration from version 4 is not 005_run_versions.sql then 006_ready_by_priority.sql, rendered:\n%s", m4)
	}
	m5, err := pgstore.Migration(pgstore.StateTables{Work: "app_work"}, 5)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"DROP INDEX app_work_ready;", "to_regclass('app_work_ready')",
		"CREATE INDEX IF NOT EXISTS app_work_ready ON app_work (queue, tenant, due_at, seq) WHERE state = 'queued' AND priority = 0",
		"CREATE INDEX IF NOT EXISTS app_work_ready_due ON app_work (queue, tenant, due_at, seq) WHERE state = 'queued' AND priority <> 0",
		"UPDATE adk_schema SET version = 6 WHERE version = 5"} {
		if !strings.Contains(m5, want) {
			t.Errorf("the migration from version 5 lacks %q", want)
		}
	}
	if strings.Contains(m5, "app_runs_versions") || strings.Contains(m5, "{") {
		t.Errorf("the migration from version 5 is not 006_ready_by_priority.sql alone, rendered:\n%s", m5)
	}
	if _, err := pgstore.Migration(pgstore.StateTables{}, 0); !errors.Is(err, contract.ErrInvalid) {
		t.Errorf("Migration from 0: %v, want a validation error", err)
	}
}

// fakeExec fails the test if anything is sent: the checks under test must
// refuse before the round trip.
type fakeExec struct{ t *testing.T }

func (f fakeExec) Exec(context.Context, string, ...any) (pgconn.CommandTag, error) {
	f.t.Error("a statement was sent")
	return pgconn.CommandTag{}, errors.New("sent")
}
func (f fakeExec) Query(context.Context, string, ...any) (pgx.Rows, error) {
	f.t.Error("a query was sent")
	return nil, errors.New("sent")
}
func (f fakeExec) QueryRow(context.Context, string, ...any) pgx.Row {
	f.t.Error("a query was sent")
	return nil
}

func TestNotifyRefusesBeforeSending(t *testing.T) {
	ctx := context.Background()
	err := pgstore.Notify(ctx, fakeExec{t}, "adk_work", strings.Repeat("x", 9000))
	var tl *pgstore.PayloadTooLargeError
	if !errors.As(err, &tl) || tl.Size != 9000 || tl.Limit != pgstore.MaxNotifyPayload || tl.Channel != "adk_work" {
		t.Fatalf("Notify(9000 bytes) = %v, want *PayloadTooLargeError", err)
	}
	if !errors.Is(err, contract.ErrInvalid) {
		t.Error("PayloadTooLargeError does not match ErrInvalid")
	}
	if err := pgstore.Notify(ctx, fakeExec{t}, strings.Repeat("c", 64), "x"); !errors.Is(err, contract.ErrInvalid) {
		t.Errorf("64-byte channel: %v, want a validation error", err)
	}
	if err := pgstore.Notify(ctx, fakeExec{t}, "", "x"); !errors.Is(err, contract.ErrInvalid) {
		t.Errorf("empty channel: %v, want a validation error", err)
	}
}

func TestOversizedValuesRefusedBeforeSending(t *testing.T) {
	ctx := context.Background()
	s, err := pgstore.NewState(fakeExec{t}, nil, pgstore.Settings{MaxValueBytes: 10})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.PutRun(ctx, contract.Run{Tenant: "a", ID: "r", Data: []byte(`"0123456789"`)})
	var pe *contract.StatePersistenceError
	if !errors.As(err, &pe) || pe.Reason != contract.ReasonTooLarge || contract.Retryable(err) {
		t.Errorf("PutRun over the limit: %v, want too_large, not retryable", err)
	}
	q, err := pgstore.NewQueue(fakeExec{t}, nil, pgstore.Settings{MaxValueBytes: 10})
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Enqueue(ctx, contract.Item{Tenant: "a", ID: "i", Payload: make([]byte, 11)}); !errors.As(err, &pe) {
		t.Errorf("Enqueue over the limit: %v, want too_large", err)
	}
	if _, err := q.Claim(ctx, contract.ClaimRequest{LeaseFor: 0, Max: 1}); !errors.Is(err, contract.ErrInvalid) {
		t.Errorf("Claim with no lease: %v, want invalid", err)
	}
}

func TestNilExecutorRefused(t *testing.T) {
	if _, err := pgstore.NewState(nil, nil, pgstore.Settings{}); !errors.Is(err, contract.ErrInvalid) {
		t.Errorf("NewState(nil): %v", err)
	}
	if _, err := pgstore.NewQueue(nil, nil, pgstore.Settings{}); !errors.Is(err, contract.ErrInvalid) {
		t.Errorf("NewQueue(nil): %v", err)
	}
	if _, err := pgstore.NewBlobStore(nil, pgstore.Settings{}); !errors.Is(err, contract.ErrInvalid) {
		t.Errorf("NewBlobStore(nil): %v", err)
	}
	if _, err := pgstore.NewListener(nil, pgstore.ListenerSettings{}); !errors.Is(err, contract.ErrInvalid) {
		t.Errorf("NewListener(nil): %v", err)
	}
}

func TestListenerBackoff(t *testing.T) {
	cfg, err := pgx.ParseConfig("postgres://u@127.0.0.1:1/x")
	if err != nil {
		t.Fatal(err)
	}
	l, err := pgstore.NewListener(cfg, pgstore.ListenerSettings{})
	if err != nil {
		t.Fatal(err)
	}
	steps := []time.Duration{50, 100, 200, 400, 800, 1600, 2000, 2000}
	// A draw of 0 waits the whole step, a draw of 1 half of it.
	for _, c := range []struct {
		draw float64
		half bool
	}{{0, false}, {1, true}} {
		l.SetJitter(func() float64 { return c.draw })
		for i, s := range steps {
			want := s * time.Millisecond
			if c.half {
				want /= 2
			}
			if got := l.Backoff(i); got != want {
				t.Errorf("draw %v: Backoff(%d) = %v, want %v", c.draw, i, got, want)
			}
		}
	}
	// Unpinned, every wait falls between half its step and the step, and
	// the waits differ (eight draws of one step all equal would mean no
	// jitter).
	l.SetJitter(nil)
	seen := map[time.Duration]bool{}
	var last time.Duration
	for range 8 {
		last = l.Backoff(3)
		if last < 200*time.Millisecond || last > 400*time.Millisecond {
			t.Errorf("Backoff(3) = %v, want within [200ms, 400ms]", last)
		}
		seen[last] = true
	}
	if len(seen) < 2 {
		t.Errorf("eight unpinned waits after four failures were all %v: no jitter", last)
	}
}

func TestListenWithBadDSNHidesIt(t *testing.T) {
	_, err := pgstore.Listen(context.Background(), contract.Secret("postgres://u:hunter2@[bad"), pgstore.ListenerSettings{})
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("Listen with a bad DSN: %v", err)
	}
}

// The poll-only fallback ticks, and ending the subscription stops its
// goroutine (goleak checks it at the end of the run).
func TestPollOnlySubscribe(t *testing.T) {
	q, err := pgstore.NewQueue(fakeExec{t}, nil, pgstore.Settings{PollInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ch, stop := q.Subscribe("")
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatal("no poll tick")
	}
	stop()
	stop()
}

func TestQueueChannel(t *testing.T) {
	q, err := pgstore.NewQueue(fakeExec{t}, nil, pgstore.Settings{})
	if err != nil || q.Channel() != "adk_work" {
		t.Fatalf("default channel: %q, %v; want adk_work", q.Channel(), err)
	}
	q, err = pgstore.NewQueue(fakeExec{t}, nil, pgstore.Settings{Tables: pgstore.StateTables{Work: "app_work"}})
	if err != nil || q.Channel() != "app_work" {
		t.Fatalf("channel of app_work: %q, %v", q.Channel(), err)
	}
	q, err = pgstore.NewQueue(fakeExec{t}, nil, pgstore.Settings{Channel: "tenant_a_wakes"})
	if err != nil || q.Channel() != "tenant_a_wakes" {
		t.Fatalf("custom channel: %q, %v", q.Channel(), err)
	}
	if _, err := pgstore.NewQueue(fakeExec{t}, nil, pgstore.Settings{Channel: strings.Repeat("c", 64)}); !errors.Is(err, contract.ErrInvalid) {
		t.Errorf("64-byte channel: %v, want a validation error", err)
	}
}
