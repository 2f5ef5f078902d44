package backoff_test

import (
	"fmt"
	"time"

	"github.com/adkit/adk/modules/contract/backoff"
)

// A loop that retries at most four times, waiting 100ms, 200ms and then
// 400ms (the cap) before each further try; with jitter pinned to a draw
// of 0 each wait is the whole step.
func ExampleBudget() {
	b := backoff.Budget{
		Backoff:  backoff.Backoff{Base: 100 * time.Millisecond, Max: 400 * time.Millisecond, Jitter: backoff.EqualJitter, Rand: func() float64 { return 0 }},
		Attempts: 5,
	}
	s := b.Start()
	for {
		// try; on a retryable failure:
		wait, ok := s.Next()
		if !ok {
			break
		}
		fmt.Println(wait)
	}
	fmt.Println(s.Failures(), "tries failed")
	// Output:
	// 100ms
	// 200ms
	// 400ms
	// 400ms
	// 5 tries failed
}
