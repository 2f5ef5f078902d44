package pgstore

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/adkit/adk/modules/contract"
)

// What a transaction pooler answers becomes a *PoolerError naming the
// setting and the fix; everything else passes through untouched.
func TestPoolerErr(t *testing.T) {
	cases := []struct {
		name    string
		err     error
		mode    pgx.QueryExecMode
		setting string
		value   string
		fix     []string
	}{
		{"statement already exists", &pgconn.PgError{Code: "42P05", Message: `prepared statement "stmtcache_1" already exists`}, pgx.QueryExecModeCacheStatement,
			"DefaultQueryExecMode", "pgx.QueryExecModeCacheStatement", []string{"pgx.QueryExecModeExec", "QueryExecModeSimpleProtocol", "max_prepared_statements", "1.21"}},
		{"statement does not exist", fmt.Errorf("wrapped: %w", &pgconn.PgError{Code: "26000", Message: `prepared statement "stmtcache_1" does not exist`}), pgx.QueryExecModeDescribeExec,
			"DefaultQueryExecMode", "pgx.QueryExecModeDescribeExec", []string{"default_query_exec_mode=exec"}},
		{"mode unknown", &pgconn.PgError{Code: "26000"}, 0,
			"DefaultQueryExecMode", "a mode that prepares statements (pgx's default, pgx.QueryExecModeCacheStatement, or pgx.QueryExecModeDescribeExec)", []string{"pgx.QueryExecModeExec"}},
		{"startup parameter refused", fmt.Errorf("connect: %w", &pgconn.PgError{Severity: "FATAL", Code: "08P01", Message: "unsupported startup parameter: statement_timeout"}), 0,
			`RuntimeParams["statement_timeout"]`, "sent at connect", []string{"ALTER ROLE <role> SET statement_timeout", "RECONNECT", "ignore_startup_parameters only drops it"}},
		{"options refused", &pgconn.PgError{Code: "08P01", Message: "unsupported startup parameter: options"}, 0,
			`RuntimeParams["options"]`, "sent at connect", []string{"ALTER ROLE <role> SET name = value", "RECONNECT"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := poolerErr(c.err, c.mode)
			var pe *PoolerError
			if !errors.As(err, &pe) {
				t.Fatalf("poolerErr(%v) = %T %v, want *PoolerError", c.err, err, err)
			}
			if pe.Setting != c.setting || pe.Value != c.value {
				t.Errorf("Setting, Value = %q, %q; want %q, %q", pe.Setting, pe.Value, c.setting, c.value)
			}
			for _, f := range c.fix {
				if !strings.Contains(pe.Fix, f) {
					t.Errorf("Fix %q does not say %q", pe.Fix, f)
				}
			}
			if !errors.Is(err, c.err) && !errors.Is(err, errors.Unwrap(c.err)) {
				t.Errorf("the driver's error is not wrapped: %v", err)
			}
			if contract.Retryable(err) {
				t.Error("a pooler's refusal is retryable; only a configuration change helps")
			}
			var pf *contract.PreflightError
			if !errors.As(err, &pf) || pf.Setting != c.setting || pf.Value != c.value || pf.Fix != pe.Fix {
				t.Errorf("errors.As(*contract.PreflightError) = %+v, want the same setting, value and fix", pf)
			}
			// Through the backings' mappers it stays what it is.
			for _, mapped := range []error{stateErr(err), queueErr(err)} {
				if !errors.As(mapped, &pe) {
					t.Errorf("mapped to %T %v", mapped, mapped)
				}
			}
		})
	}
	for _, other := range []error{
		nil,
		errors.New("plain"),
		&pgconn.PgError{Code: "08P01", Message: "protocol violation"},
		&pgconn.PgError{Code: "42P01", Message: "relation does not exist"},
	} {
		if got := poolerErr(other, pgx.QueryExecModeCacheStatement); got != other {
			t.Errorf("poolerErr(%v) = %v, want it unchanged", other, got)
		}
	}
}

// A listener's probe error says what to do, differently when the
// connection is known to go through a pooler.
func TestListenerProbeErrorText(t *testing.T) {
	cause := errors.New("dial refused")
	pooled := &ListenerProbeError{Channel: "adk_probe_x", Timeout: 2 * time.Second, Pooled: true, Err: cause}
	if s := pooled.Error(); !strings.Contains(s, `"adk_probe_x"`) || !strings.Contains(s, "2s") || !strings.Contains(s, "dial refused") ||
		!strings.Contains(s, "point the listener's config at PostgreSQL itself") || !strings.Contains(s, "pool_mode = transaction") {
		t.Errorf("pooled probe error: %s", s)
	}
	if !errors.Is(pooled, cause) || contract.Retryable(pooled) {
		t.Errorf("Unwrap/Retryable wrong: %v", pooled)
	}
	direct := &ListenerProbeError{Channel: "c", Timeout: time.Second}
	if s := direct.Error(); strings.Contains(s, "sending the probe failed") || !strings.Contains(s, "drops asynchronous messages") {
		t.Errorf("direct probe error: %s", s)
	}
}

func TestExecModeNames(t *testing.T) {
	for _, m := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeCacheDescribe, pgx.QueryExecModeDescribeExec, pgx.QueryExecModeExec, pgx.QueryExecModeSimpleProtocol} {
		if n := execModeName(m); !strings.HasPrefix(n, "pgx.QueryExecMode") {
			t.Errorf("execModeName(%v) = %q", m, n)
		}
	}
	if n := execModeName(42); !strings.HasPrefix(n, "unknown") {
		t.Errorf("execModeName(42) = %q", n)
	}
}
