package pgstore

import (
	"context"

	"github.com/adkit/adk/modules/contract"
)

// Open runs Verify once and returns a state store and a work queue on the
// same executor and settings: the usual way to start a deployment that
// keeps both in one database. The executor stays the caller's.
//
// Every backing has this shape: Open(ctx, conn, clock, Settings) checks
// the server first, New(conn, clock, Settings) builds the same values
// without the check, and OpenState, OpenQueue, NewState and NewQueue build
// one half.
func Open(ctx context.Context, exec Executor, clock contract.Clock, s Settings) (*PostgresStateStore, *PostgresWorkQueue, error) {
	st, q, err := New(exec, clock, s)
	if err != nil {
		return nil, nil, err
	}
	if err := Verify(ctx, exec, st.d.settings.Tables); err != nil {
		return nil, nil, err
	}
	return st, q, nil
}

// New returns a state store and a work queue on exec without verifying
// the database. It refuses table names that are not plain identifiers. A
// nil clock means the system clock.
func New(exec Executor, clock contract.Clock, s Settings) (*PostgresStateStore, *PostgresWorkQueue, error) {
	st, err := NewState(exec, clock, s)
	if err != nil {
		return nil, nil, err
	}
	q, err := NewQueue(exec, clock, s)
	if err != nil {
		return nil, nil, err
	}
	return st, q, nil
}
