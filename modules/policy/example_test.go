package policy_test

import (
	"fmt"
	"time"

	"github.com/adkit/adk/modules/policy"
)

// The backoff schedule of a policy, before jitter.
func ExamplePolicy_Backoff() {
	p := policy.Policy{MaxAttempts: 6, BaseDelay: time.Second, MaxDelay: 10 * time.Second}
	for attempt := 1; attempt < p.MaxAttempts; attempt++ {
		fmt.Printf("after attempt %d wait up to %v\n", attempt, p.Backoff(attempt))
	}
	// Output:
	// after attempt 1 wait up to 1s
	// after attempt 2 wait up to 2s
	// after attempt 3 wait up to 4s
	// after attempt 4 wait up to 8s
	// after attempt 5 wait up to 10s
}

// Deciding about a failed attempt; a permanent error dead-letters at once.
func ExamplePolicy_Decide() {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := policy.Policy{MaxAttempts: 3, Jitter: policy.Fixed(1)} // no jitter, for a stable output
	fmt.Println(p.Decide(1, fmt.Errorf("timeout"), now))
	fmt.Println(p.Decide(3, fmt.Errorf("timeout"), now).Reason)
	fmt.Println(p.Decide(1, policy.Permanent(fmt.Errorf("bad request")), now).Reason)
	// Output:
	// {true 2026-01-01 00:00:01 +0000 UTC retry}
	// max_attempts
	// permanent
}
