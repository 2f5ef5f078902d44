package policy_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/adkit/adk/modules/policy"
)

// The shortest use from the README: ask the policy what happens after
// a failed attempt.
func Example_readme() {
	fmt.Println(readme(5, errors.New("model timeout")))
	// Output: dead letter: max_attempts
}

// readme is the README's shortest use, as it stands there.
func readme(attempts int, err error) string {
	p := policy.Policy{MaxAttempts: 5} // zero fields take the defaults
	d := p.Decide(attempts, err, time.Now())
	if d.Retry {
		return "due again at " + d.At.Format(time.RFC3339)
	}
	return "dead letter: " + d.Reason // "max_attempts" or "permanent"
}
