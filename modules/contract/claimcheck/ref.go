package claimcheck

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"github.com/adkit/adk/modules/contract"
)

// maxRefBytes bounds a reference accepted by Get and Delete.
const maxRefBytes = 128

// newRef returns a fresh random reference: 128 bits from crypto/rand, so
// references cannot be guessed and two Puts never collide.
func newRef() contract.Ref {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never returns an error
	return contract.Ref(hex.EncodeToString(b[:]))
}

// validateRef accepts only ASCII letters, digits, '-' and '_': a reference
// becomes a file name in Dir, so a separator, a dot or a NUL byte must never
// get through.
func validateRef(ref contract.Ref) error {
	if ref == "" {
		return &contract.ValidationError{Field: "ref", Problem: "is empty; pass a reference returned by Put"}
	}
	if len(ref) > maxRefBytes {
		return &contract.ValidationError{Field: "ref", Problem: fmt.Sprintf("is %d bytes; a reference is at most %d", len(ref), maxRefBytes)}
	}
	for i := 0; i < len(ref); i++ {
		c := ref[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
		if !ok {
			return &contract.ValidationError{Field: "ref", Problem: fmt.Sprintf("contains %q; a reference holds only letters, digits, '-' and '_'", c)}
		}
	}
	return nil
}

// check validates the arguments every store method shares and honours a
// context that is already done.
func check(ctx context.Context, tenant string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return contract.ValidateName("tenant", tenant)
}

// notFound is the error for a reference the store does not hold.
func notFound(tenant string, ref contract.Ref) error {
	return fmt.Errorf("claimcheck: blob %q of tenant %q: %w", ref, tenant, contract.ErrNotFound)
}
