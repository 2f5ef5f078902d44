package contract

import "context"

// Ref is a claim-check reference: what an item or run carries in place of
// bytes too large to hold inline.
type Ref string

// ClaimCheck stores blobs out of line. Implementations: in-memory and local
// directory (package claimcheck), PostgreSQL (pgstore); S3 or GCS plug in
// through the same three methods.
type ClaimCheck interface {
	// Put stores data for the tenant and returns its reference.
	Put(ctx context.Context, tenant string, data []byte) (Ref, error)
	// Get returns the blob, or an error wrapping ErrNotFound.
	Get(ctx context.Context, tenant string, ref Ref) ([]byte, error)
	// Delete removes the blob; deleting a missing blob is not an error.
	Delete(ctx context.Context, tenant string, ref Ref) error
}
