package sqlitestore

import (
	"context"
	"database/sql"

	"github.com/adkit/adk/modules/contract"

	// The pure-Go SQLite driver, registered as "sqlite".
	_ "modernc.org/sqlite"
)

// DriverName is the database/sql driver OpenDB uses: modernc.org/sqlite.
const DriverName = "sqlite"

// maxIdleConns keeps enough connections open that a busy pool does not
// close and reopen them (each opening runs the DSN's pragmas).
const maxIdleConns = 16

// OpenDB opens the SQLite file at path (created when missing) with the
// DSN the backings need: WAL, the busy timeout and synchronous level of
// s, and BEGIN IMMEDIATE for transactions. Hand the *sql.DB to
// OpenState, OpenQueue and NewBlobStore, and close it after
// them.
func OpenDB(path string, s Settings) (*sql.DB, error) {
	if _, err := s.normalized(); err != nil {
		return nil, err
	}
	db, err := sql.Open(DriverName, DSN(path, s))
	if err != nil {
		return nil, err
	}
	db.SetMaxIdleConns(maxIdleConns)
	return db, nil
}

// Open prepares the file once (creating the schema in an empty file,
// verifying an existing one) and returns a state store and a work queue
// on db with the same settings. Every backing has this shape: Open(ctx,
// conn, clock, Settings) checks first, New(conn, clock, Settings) builds
// the same values without the check, and OpenState, OpenQueue, NewState
// and NewQueue build one half.
func Open(ctx context.Context, d *sql.DB, clock contract.Clock, s Settings) (*SQLiteStateStore, *SQLiteWorkQueue, error) {
	st, q, err := New(d, clock, s)
	if err != nil {
		return nil, nil, err
	}
	if err := Prepare(ctx, d, st.d.settings); err != nil {
		return nil, nil, err
	}
	return st, q, nil
}

// New returns a state store and a work queue on db without preparing the
// file. A nil clock means the system clock.
func New(d *sql.DB, clock contract.Clock, s Settings) (*SQLiteStateStore, *SQLiteWorkQueue, error) {
	st, err := NewState(d, clock, s)
	if err != nil {
		return nil, nil, err
	}
	q, err := NewQueue(d, clock, s)
	if err != nil {
		return nil, nil, err
	}
	return st, q, nil
}
