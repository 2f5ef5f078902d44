package pgstore

import (
	"fmt"
	"strings"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/policy"
)

// Defaults applied to the zero fields of [Settings].
const (
	// DefaultAcquireTimeout bounds the wait for a pooled connection before
	// an operation reports *contract.PoolExhaustedError.
	DefaultAcquireTimeout = time.Second
	// DefaultPollInterval is how often a claimer without a listener is
	// told to poll (the poll-only fallback of Subscribe).
	DefaultPollInterval = 50 * time.Millisecond
	// DefaultTurnRetention is how long an idle tenant keeps its place in
	// the rotation.
	DefaultTurnRetention = time.Hour
)

// Settings configure the PostgreSQL backings. The zero value is usable.
type Settings struct {
	// DSN is where the database is. The backings run on the executor they
	// are given and never read it; Listen and adkctl use it. It never
	// appears in an error or a log line.
	DSN contract.Secret
	// Tables names the tables; zero fields take the defaults of
	// [DefaultTables].
	Tables StateTables
	// MaxValueBytes caps a run's Data and an item's Payload, checked
	// before anything is sent. Zero means contract.DefaultMaxValueBytes.
	MaxValueBytes int
	// Runs says how the state store treats fences and versions of runs
	// (contract.RunPolicy); the zero value keeps no versions and lets
	// unfenced writes land.
	Runs contract.RunPolicy
	// Policy decides retries and dead letters for the queue.
	Policy policy.Policy
	// AcquireTimeout bounds the wait for a connection from a
	// *pgxpool.Pool. Zero means DefaultAcquireTimeout.
	AcquireTimeout time.Duration
	// Listener, when set, delivers the queue's wakes (LISTEN/NOTIFY).
	// Without it Subscribe falls back to polling every PollInterval.
	Listener *Listener
	// Channel is the NOTIFY channel of the queue's wakes (the payload is
	// the queue name). Empty means NotifyChannel(Tables), the work table's
	// name. Channels are database-wide: deployments that keep separate
	// tables in one database (one schema each, say) should give each its
	// own channel, or their claimers wake one another (harmless, wasted).
	Channel string
	// PollInterval is the poll-only fallback's period. Zero means
	// DefaultPollInterval.
	PollInterval time.Duration
	// TurnRetention is how long Reap keeps the rotation row of a tenant
	// that holds nothing in the queue (with its Served count and recent
	// turns). Zero means DefaultTurnRetention.
	TurnRetention time.Duration
}

func (s Settings) normalized() (Settings, error) {
	t, err := s.Tables.normalized()
	if err != nil {
		return s, err
	}
	s.Tables = t
	if err := contract.ValidateRunPolicy("Settings.Runs", s.Runs); err != nil {
		return s, err
	}
	if s.MaxValueBytes <= 0 {
		s.MaxValueBytes = contract.DefaultMaxValueBytes
	}
	if s.AcquireTimeout <= 0 {
		s.AcquireTimeout = DefaultAcquireTimeout
	}
	if s.PollInterval <= 0 {
		s.PollInterval = DefaultPollInterval
	}
	if s.Channel == "" {
		s.Channel = NotifyChannel(s.Tables)
	}
	if err := validateChannel(s.Channel); err != nil {
		return s, err
	}
	if s.TurnRetention <= 0 {
		s.TurnRetention = DefaultTurnRetention
	}
	return s, nil
}

// StateTables names the tables the backings read and write. Names are
// interpolated into SQL (a placeholder cannot name a relation), so each
// must be a plain, unquoted PostgreSQL identifier: a lower-case letter or
// underscore, then lower-case letters, digits or underscores, at most
// [MaxTableName] bytes, and not a reserved word. Put the tables in another
// schema with the connection's search_path, not with a dotted name.
type StateTables struct {
	Runs  string // default "adk_runs"
	Work  string // default "adk_work"
	Turns string // default "adk_queue_turns"
	Blobs string // default "adk_blobs"
}

// MaxTableName leaves room under PostgreSQL's 63-byte identifier limit for
// the suffixes of the index and sequence names derived from a table name.
const MaxTableName = 48

// DefaultTables returns the table names of ExpectedSchema.
func DefaultTables() StateTables {
	return StateTables{Runs: "adk_runs", Work: "adk_work", Turns: "adk_queue_turns", Blobs: "adk_blobs"}
}

// Validate reports the first name that is not a plain identifier, as a
// *contract.ValidationError. Empty fields are refused here; the backings
// fill them with the defaults before validating.
func (t StateTables) Validate() error {
	for _, f := range []struct{ field, name string }{
		{"StateTables.Runs", t.Runs}, {"StateTables.Work", t.Work},
		{"StateTables.Turns", t.Turns}, {"StateTables.Blobs", t.Blobs},
	} {
		if err := ValidateIdentifier(f.field, f.name); err != nil {
			return err
		}
	}
	seen := map[string]bool{}
	for _, n := range []string{t.Runs, t.Work, t.Turns, t.Blobs, "adk_schema"} {
		if seen[n] {
			return &contract.ValidationError{Field: "StateTables", Problem: fmt.Sprintf("names table %q twice (adk_schema is taken); give each table its own name", n)}
		}
		seen[n] = true
	}
	return nil
}

func (t StateTables) normalized() (StateTables, error) {
	d := DefaultTables()
	for _, f := range []struct {
		dst *string
		def string
	}{{&t.Runs, d.Runs}, {&t.Work, d.Work}, {&t.Turns, d.Turns}, {&t.Blobs, d.Blobs}} {
		if *f.dst == "" {
			*f.dst = f.def
		}
	}
	return t, t.Validate()
}

// ValidateIdentifier checks that name is a plain PostgreSQL identifier
// that needs no quoting, as StateTables requires.
func ValidateIdentifier(field, name string) error {
	bad := func(problem string) error {
		return &contract.ValidationError{Field: field, Problem: problem}
	}
	switch {
	case name == "":
		return bad("is empty; give a table name such as adk_runs")
	case len(name) > MaxTableName:
		return bad(fmt.Sprintf("is %d bytes; keep table names to %d", len(name), MaxTableName))
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c == '_':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return bad(fmt.Sprintf("%q is not a plain identifier: use lower-case letters, digits and underscores, starting with a letter or underscore, unquoted and without a schema prefix (set search_path instead)", name))
		}
	}
	if reservedWords[name] {
		return bad(fmt.Sprintf("%q is a reserved SQL word; choose another name", name))
	}
	if strings.HasPrefix(name, "pg_") {
		return bad(fmt.Sprintf("%q uses the pg_ prefix PostgreSQL reserves for system objects", name))
	}
	return nil
}

// reservedWords are PostgreSQL's reserved key words (those that cannot
// name a table without quotes).
var reservedWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`all analyse analyze and any array as asc asymmetric authorization binary both case cast
		check collate collation column concurrently constraint create cross current_catalog current_date current_role
		current_schema current_time current_timestamp current_user default deferrable desc distinct do else end except
		false fetch for foreign freeze from full grant group having ilike in initially inner intersect into is isnull join
		lateral leading left like limit localtime localtimestamp natural not notnull null offset on only or order outer
		overlaps placing primary references returning right select session_user similar some symmetric system_user table
		tablesample then to trailing true union unique user using variadic verbose when where window with`) {
		m[w] = true
	}
	return m
}()
