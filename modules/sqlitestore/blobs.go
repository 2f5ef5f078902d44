package sqlitestore

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/adkit/adk/modules/contract"
)

// BlobStore is a contract.ClaimCheck on the blob table of the file. It
// keeps payloads too large to travel inline: wrap the queue with
// claimcheck.Wrap.
type BlobStore struct {
	db    *db
	clock contract.Clock
}

var _ contract.ClaimCheck = (*BlobStore)(nil)

// NewBlobStore returns a blob store on db, a file prepared by Prepare (or
// by OpenState or OpenQueue). A nil clock means the system clock.
func NewBlobStore(d *sql.DB, clock contract.Clock) (*BlobStore, error) {
	if d == nil {
		return nil, nilDB()
	}
	if clock == nil {
		clock = contract.SystemClock{}
	}
	return &BlobStore{db: newDB(d), clock: clock}, nil
}

// Bound returns a blob store that runs inside tx.
func (b *BlobStore) Bound(tx *sql.Tx) *BlobStore {
	return &BlobStore{db: b.db.boundTo(tx), clock: b.clock}
}

// maxBlobRef bounds the references Get and Delete accept.
const maxBlobRef = 128

// Put stores data for the tenant under a fresh random reference.
func (b *BlobStore) Put(ctx context.Context, tenant string, data []byte) (contract.Ref, error) {
	if err := contract.ValidateName("tenant", tenant); err != nil {
		return "", err
	}
	var raw [16]byte
	_, _ = rand.Read(raw[:])
	ref := contract.Ref(hex.EncodeToString(raw[:]))
	if data == nil {
		data = []byte{}
	}
	err := b.db.write(ctx, func(ctx context.Context, e execer) error {
		_, err := e.ExecContext(ctx, blobPutSQL, tenant, string(ref), data, nanos(b.clock.Now()))
		return err
	})
	if err != nil {
		return "", stateErr(ctx, err)
	}
	return ref, nil
}

// Get returns the blob, or an error wrapping contract.ErrNotFound.
func (b *BlobStore) Get(ctx context.Context, tenant string, ref contract.Ref) ([]byte, error) {
	if err := blobArgs(tenant, ref); err != nil {
		return nil, err
	}
	var data []byte
	err := b.db.read(ctx, func(ctx context.Context, e execer) error {
		return e.QueryRowContext(ctx, blobGetSQL, tenant, string(ref)).Scan(&data)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("sqlitestore: blob %q of tenant %q: %w", ref, tenant, contract.ErrNotFound)
	}
	if err != nil {
		return nil, stateErr(ctx, err)
	}
	if data == nil {
		data = []byte{}
	}
	return data, nil
}

// Delete removes the blob; a missing one is not an error.
func (b *BlobStore) Delete(ctx context.Context, tenant string, ref contract.Ref) error {
	if err := blobArgs(tenant, ref); err != nil {
		return err
	}
	return stateErr(ctx, b.db.write(ctx, func(ctx context.Context, e execer) error {
		_, err := e.ExecContext(ctx, blobDeleteSQL, tenant, string(ref))
		return err
	}))
}

func blobArgs(tenant string, ref contract.Ref) error {
	if err := contract.ValidateName("tenant", tenant); err != nil {
		return err
	}
	if ref == "" || len(ref) > maxBlobRef {
		return &contract.ValidationError{Field: "ref", Problem: fmt.Sprintf("must be 1 to %d bytes; pass a reference returned by Put", maxBlobRef)}
	}
	return contract.ValidateName("ref", string(ref))
}
