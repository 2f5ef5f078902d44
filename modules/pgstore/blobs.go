package pgstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/adkit/adk/modules/contract"
)

// BlobStore is a contract.ClaimCheck on the bytea blob table of the
// schema. It keeps payloads too large to travel inline, and works beside
// any queue, a Redis one included: wrap the queue with claimcheck.Wrap.
type BlobStore struct {
	db *db
	q  queries
}

var _ contract.ClaimCheck = (*BlobStore)(nil)

// NewBlobStore returns a blob store on exec. Only Settings.Tables and
// AcquireTimeout matter to it.
func NewBlobStore(exec Executor, s Settings) (*BlobStore, error) {
	if exec == nil {
		return nil, &contract.ValidationError{Field: "exec", Problem: "is nil; pass a *pgxpool.Pool, *pgx.Conn or pgx.Tx"}
	}
	s, err := s.normalized()
	if err != nil {
		return nil, err
	}
	return &BlobStore{db: newDB(exec, s.AcquireTimeout), q: loadQueries(s.Tables)}, nil
}

// Bound returns a blob store that runs inside tx.
func (b *BlobStore) Bound(tx pgx.Tx) *BlobStore {
	return &BlobStore{db: b.db.boundTo(tx), q: b.q}
}

// maxBlobRef bounds the references Get and Delete accept.
const maxBlobRef = 128

// Put stores data for the tenant under a fresh random reference.
func (b *BlobStore) Put(ctx context.Context, tenant string, data []byte) (contract.Ref, error) {
	if err := blobArgs(ctx, tenant); err != nil {
		return "", err
	}
	var raw [16]byte
	_, _ = rand.Read(raw[:])
	ref := contract.Ref(hex.EncodeToString(raw[:]))
	if data == nil {
		data = []byte{}
	}
	err := b.db.run(ctx, func(ctx context.Context, e Executor) error {
		_, err := e.Exec(ctx, b.q.blobPut, tenant, string(ref), data)
		return err
	})
	if err != nil {
		return "", stateErr(err)
	}
	return ref, nil
}

// Get returns the blob, or an error wrapping contract.ErrNotFound.
func (b *BlobStore) Get(ctx context.Context, tenant string, ref contract.Ref) ([]byte, error) {
	if err := blobArgs(ctx, tenant); err != nil {
		return nil, err
	}
	if err := validateBlobRef(ref); err != nil {
		return nil, err
	}
	var data []byte
	err := b.db.run(ctx, func(ctx context.Context, e Executor) error {
		return e.QueryRow(ctx, b.q.blobGet, tenant, string(ref)).Scan(&data)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("pgstore: blob %q of tenant %q: %w", ref, tenant, contract.ErrNotFound)
	}
	if err != nil {
		return nil, stateErr(err)
	}
	if data == nil {
		data = []byte{}
	}
	return data, nil
}

// Delete removes the blob; a missing one is not an error.
func (b *BlobStore) Delete(ctx context.Context, tenant string, ref contract.Ref) error {
	if err := blobArgs(ctx, tenant); err != nil {
		return err
	}
	if err := validateBlobRef(ref); err != nil {
		return err
	}
	return stateErr(b.db.run(ctx, func(ctx context.Context, e Executor) error {
		_, err := e.Exec(ctx, b.q.blobDelete, tenant, string(ref))
		return err
	}))
}

func blobArgs(ctx context.Context, tenant string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return contract.ValidateName("tenant", tenant)
}

func validateBlobRef(ref contract.Ref) error {
	if ref == "" || len(ref) > maxBlobRef {
		return &contract.ValidationError{Field: "ref", Problem: fmt.Sprintf("must be 1 to %d bytes; pass a reference returned by Put", maxBlobRef)}
	}
	return contract.ValidateName("ref", string(ref))
}
