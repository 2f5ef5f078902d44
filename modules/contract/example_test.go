package contract_test

import (
	"errors"
	"fmt"

	"github.com/adkit/adk/modules/contract"
)

// Typed errors are matched with errors.Is and errors.As; Retryable answers
// "may the same call succeed later?".
func ExampleRetryable() {
	errs := []error{
		&contract.QueueUnavailableError{Err: errors.New("connection refused")},
		contract.TooLarge("item payload", 300_000, contract.DefaultMaxValueBytes),
		&contract.StateConflictError{Tenant: "acme", ID: "run_1", Expected: 3, Actual: 4},
	}
	for _, err := range errs {
		fmt.Println(contract.Retryable(err), err)
	}
	// Output:
	// true adk: queue unavailable: connection refused
	// false adk: item payload is 300000 bytes, over the 262144-byte limit (too_large): put the payload behind a claim check (claimcheck.Wrap)
	// false adk: run "acme"/"run_1" version conflict: expected 3, stored 4 (re-read the run and apply the change again)
}

// A Secret prints as [redacted] however it is formatted.
func ExampleSecret() {
	dsn := contract.Secret("postgres://adk:hunter2@db/adk")
	fmt.Println(dsn, fmt.Sprintf("%#v", dsn))
	// Output: [redacted] [redacted]
}
