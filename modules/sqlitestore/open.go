package sqlitestore

import (
	"database/sql"

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
// OpenStateStore, OpenWorkQueue and NewBlobStore, and close it after
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
