package sqlitestore

import (
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/policy"
)

// Defaults applied to the zero fields of [Settings].
const (
	// DefaultBusyTimeout is how long a connection waits for the write lock
	// another process (or another connection) holds before the operation
	// fails as unavailable.
	DefaultBusyTimeout = 5 * time.Second
	// DefaultPollInterval is how often a subscriber's watcher looks for
	// commits made by other processes on the same file.
	DefaultPollInterval = 50 * time.Millisecond
)

// Durability says what an acknowledged write survives.
type Durability int

const (
	// DurabilityFull (the default) syncs the write-ahead log on every
	// commit (synchronous=FULL): a write that returned survives a power
	// cut, and so does every fencing token a claim handed out.
	DurabilityFull Durability = iota
	// DurabilityNormal syncs only at checkpoints (synchronous=NORMAL in
	// WAL mode). A process crash loses nothing, but a power cut or an
	// operating-system crash can roll back the last transactions that
	// returned: runs written, items enqueued or completed, and claims —
	// whose fencing tokens may then be issued again. Commits cost no
	// fsync, several times faster on most disks.
	DurabilityNormal
)

// String returns the pragma value of the durability.
func (d Durability) String() string {
	if d == DurabilityNormal {
		return "NORMAL"
	}
	return "FULL"
}

// Settings configure the SQLite backings. The zero value is usable.
type Settings struct {
	// MaxValueBytes caps a run's Data and an item's Payload, checked
	// before anything is written. Zero means contract.DefaultMaxValueBytes.
	MaxValueBytes int
	// Runs says how the state store treats fences and versions of runs
	// (contract.RunPolicy); the zero value keeps no versions and lets
	// unfenced writes land.
	Runs contract.RunPolicy
	// Policy decides retries and dead letters for the queue.
	Policy policy.Policy
	// Durability is what OpenDB asks of every connection, and what Open
	// requires of the connections it is given. The zero value is
	// DurabilityFull.
	Durability Durability
	// BusyTimeout is the busy_timeout OpenDB gives every connection. Zero
	// means DefaultBusyTimeout.
	BusyTimeout time.Duration
	// PollInterval is how often a subscribed queue checks the file for
	// commits by other processes (PRAGMA data_version); commits in this
	// process wake subscribers at once. Zero means DefaultPollInterval.
	PollInterval time.Duration
}

func (s Settings) normalized() (Settings, error) {
	if err := contract.ValidateRunPolicy("Settings.Runs", s.Runs); err != nil {
		return s, err
	}
	if s.MaxValueBytes <= 0 {
		s.MaxValueBytes = contract.DefaultMaxValueBytes
	}
	if s.BusyTimeout <= 0 {
		s.BusyTimeout = DefaultBusyTimeout
	}
	if s.PollInterval <= 0 {
		s.PollInterval = DefaultPollInterval
	}
	if s.Durability != DurabilityFull && s.Durability != DurabilityNormal {
		return s, &contract.ValidationError{Field: "Settings.Durability", Problem: fmt.Sprintf("is %d; use DurabilityFull or DurabilityNormal", int(s.Durability))}
	}
	return s, nil
}

// DSN returns the modernc.org/sqlite data source name OpenDB opens: the
// file at path in WAL mode, with the settings' busy timeout and
// synchronous level on every connection, and BEGIN IMMEDIATE for the
// transactions database/sql begins (so a transaction given to Bound holds
// the write lock from its start and never fails upgrading a read).
func DSN(path string, s Settings) string {
	s, _ = s.normalized()
	q := url.Values{}
	q.Set("_busy_timeout", strconv.FormatInt(s.BusyTimeout.Milliseconds(), 10))
	q.Set("_journal_mode", "WAL")
	q.Set("_synchronous", s.Durability.String())
	q.Set("_txlock", "immediate")
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
}
