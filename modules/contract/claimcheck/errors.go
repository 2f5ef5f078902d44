package claimcheck

import (
	"fmt"

	"github.com/adkit/adk/modules/contract"
)

// MissingBlobError reports an item whose claim check could not be
// redeemed on Claim: its reference names a blob the store does not hold
// (Err wraps contract.ErrNotFound) or the store could not be read (Err is
// the store's error). It unwraps to Err, so errors.Is(err,
// contract.ErrNotFound) tells the two apart.
type MissingBlobError struct {
	Key contract.ItemKey
	Ref contract.Ref
	Err error
}

func (e *MissingBlobError) Error() string {
	return fmt.Sprintf("claimcheck: payload of item %q/%q/%q behind reference %q could not be read: %v",
		e.Key.Tenant, e.Key.Queue, e.Key.ID, e.Ref, e.Err)
}

func (e *MissingBlobError) Unwrap() error { return e.Err }

// BlobCleanupError reports a blob that stayed behind after the item
// referring to it was completed or purged. The item's own operation
// succeeded; the blob is an orphan that takes space and nothing else.
type BlobCleanupError struct {
	Tenant string
	Ref    contract.Ref
	Err    error
}

func (e *BlobCleanupError) Error() string {
	return fmt.Sprintf("claimcheck: blob %q of tenant %q could not be deleted and is orphaned: %v", e.Ref, e.Tenant, e.Err)
}

func (e *BlobCleanupError) Unwrap() error { return e.Err }
