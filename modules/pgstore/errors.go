package pgstore

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/adkit/adk/modules/contract"
)

// PoolerError is a call that failed, or a connection Verify refused,
// because of how a connection pooler between the kit and PostgreSQL
// treats it. PgBouncer in pool_mode = transaction is the usual one: it
// runs each transaction on whichever server connection is free, so what
// a client left on a server connection (a prepared statement, a SET) is
// not there for its next transaction and is there for other clients';
// and it refuses the startup parameters it does not track.
//
// Setting names the client setting at fault, Value its value, Fix what
// to change. It is never retryable: the same call fails again until the
// configuration changes. errors.As also matches it as a
// *contract.PreflightError, the configuration refusal it is, so callers
// of Open and Health need no new case. Nothing was written: every cause
// stops a statement before it runs.
type PoolerError struct {
	Setting string
	Value   string
	Fix     string
	Err     error // the driver's error, when a statement or a connection failed
}

func (e *PoolerError) Error() string {
	msg := "pgstore: behind a connection pooler: " + e.Setting + " = " + e.Value
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg + ": " + e.Fix
}

// Unwrap returns the driver's error.
func (e *PoolerError) Unwrap() error { return e.Err }

// Retryable is false: only a configuration change helps.
func (e *PoolerError) Retryable() bool { return false }

// As lets errors.As fill a *contract.PreflightError with the setting,
// its value and the fix.
func (e *PoolerError) As(target any) bool {
	if p, ok := target.(**contract.PreflightError); ok {
		*p = &contract.PreflightError{Setting: e.Setting, Value: e.Value, Fix: e.Fix}
		return true
	}
	return false
}

// ListenerProbeError says that a listener's connection accepted its
// LISTENs but a probe NOTIFY, sent from another connection, did not come
// back within ListenerSettings.ProbeTimeout: the connection cannot be
// trusted to deliver wakes. Behind PgBouncer in transaction mode this is
// what happens to every notification, silently; the probe makes it an
// error. Start returns it; after a reconnect it is the listener's
// Stats().Err and the queue's Health says so.
type ListenerProbeError struct {
	Channel string        // the probe's channel (the listener's own)
	Timeout time.Duration // how long the probe was waited for
	// Pooled reports that the connection goes through a pooler: the
	// backend pid PostgreSQL reports differs from the one the connection
	// was given when it started.
	Pooled bool
	Err    error // why the probe could not be sent, when it could not
}

func (e *ListenerProbeError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "pgstore: listener: a probe NOTIFY on channel %q did not come back within %v, so LISTEN on this connection delivers nothing", e.Channel, e.Timeout)
	if e.Err != nil {
		b.WriteString(" (sending the probe failed: " + e.Err.Error() + ")")
	}
	b.WriteString(": ")
	b.WriteString(e.Fix())
	return b.String()
}

// Fix says what to change.
func (e *ListenerProbeError) Fix() string {
	if e.Pooled {
		return "the connection goes through a connection pooler (the backend pid differs from the one given at start-up), and a transaction pooler such as PgBouncer in pool_mode = transaction leaves the LISTEN on a server connection other clients use: point the listener's config at PostgreSQL itself (or at a session-mode pool) and keep the pool on the pooler; budget one direct connection per process"
	}
	return "check that nothing between the listener and PostgreSQL (a transaction pooler, a proxy) drops asynchronous messages, and that the server is not too loaded to answer within ListenerSettings.ProbeTimeout"
}

// Unwrap returns why the probe could not be sent, if it could not.
func (e *ListenerProbeError) Unwrap() error { return e.Err }

// Retryable is false: the same connection path will not deliver either.
func (e *ListenerProbeError) Retryable() bool { return false }

// execModeFix is the advice for statements a pooler moved away from
// their prepared statements.
const execModeFix = "a transaction pooler (PgBouncer in pool_mode = transaction) runs each transaction on any free server connection, so a statement pgx prepared on one is missing on the next (SQLSTATE 26000) or already taken there by another client (42P05); " +
	"set ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeExec in the pool config (default_query_exec_mode=exec in the DSN; pgx.QueryExecModeSimpleProtocol and QueryExecModeCacheDescribe work too), " +
	"or run PgBouncer 1.21 or later with max_prepared_statements above 0, which tracks prepared statements per client"

// execModeName is the Go name of a pgx exec mode, for errors.
func execModeName(m pgx.QueryExecMode) string {
	switch m {
	case pgx.QueryExecModeCacheStatement:
		return "pgx.QueryExecModeCacheStatement"
	case pgx.QueryExecModeCacheDescribe:
		return "pgx.QueryExecModeCacheDescribe"
	case pgx.QueryExecModeDescribeExec:
		return "pgx.QueryExecModeDescribeExec"
	case pgx.QueryExecModeExec:
		return "pgx.QueryExecModeExec"
	case pgx.QueryExecModeSimpleProtocol:
		return "pgx.QueryExecModeSimpleProtocol"
	}
	return "unknown (" + strconv.Itoa(int(m)) + ")"
}

// poolerErr recognises the errors a transaction pooler causes and
// returns them as a *PoolerError; any other error comes back as it is.
// mode is the executor's exec mode, when known. The kit never PREPAREs
// by name itself, so a duplicate or missing prepared statement can only
// be pgx's statement cache meeting a pooler.
func poolerErr(err error, mode pgx.QueryExecMode) error {
	var pgErr *pgconn.PgError
	if err == nil || !errors.As(err, &pgErr) {
		return err
	}
	switch {
	case pgErr.Code == "42P05" || pgErr.Code == "26000": // duplicate_prepared_statement, invalid_sql_statement_name
		value := execModeName(mode)
		if mode == 0 {
			value = "a mode that prepares statements (pgx's default, pgx.QueryExecModeCacheStatement, or pgx.QueryExecModeDescribeExec)"
		}
		return &PoolerError{Setting: "DefaultQueryExecMode", Value: value, Fix: execModeFix, Err: err}
	case pgErr.Code == "08P01" && strings.HasPrefix(pgErr.Message, "unsupported startup parameter"):
		param := strings.TrimSpace(strings.TrimPrefix(pgErr.Message, "unsupported startup parameter:"))
		return &PoolerError{Setting: "RuntimeParams[" + strconv.Quote(param) + "]", Value: "sent at connect", Fix: startupParamFix(param), Err: err}
	}
	return err
}

// startupParamFix is the advice for a startup parameter PgBouncer
// refused.
func startupParamFix(param string) string {
	if param == "options" {
		return "PgBouncer accepts only the startup parameters it tracks (client_encoding, DateStyle, TimeZone, standard_conforming_strings, application_name) and refuses the options string; " +
			"remove it from the connection string and set each of its settings on the server: ALTER ROLE <role> SET name = value (or ALTER DATABASE), then RECONNECT in PgBouncer's admin console so server connections opened before are replaced"
	}
	return "PgBouncer accepts only the startup parameters it tracks (client_encoding, DateStyle, TimeZone, standard_conforming_strings, application_name); " +
		"remove " + param + " from RuntimeParams and the DSN and set it on the server: ALTER ROLE <role> SET " + param + " = ... (or ALTER DATABASE <db> SET ...), " +
		"then RECONNECT in PgBouncer's admin console so server connections opened before are replaced. Listing it in PgBouncer's ignore_startup_parameters only drops it: the server-side setting is still needed"
}
