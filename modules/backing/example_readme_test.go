package backing_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/adkit/adk/modules/backing"
	"github.com/adkit/adk/modules/contract"
)

// The shortest use from the README: open the backing the environment
// names and claim from it.
func Example_readme() {
	if err := readme(context.Background()); err != nil && !errors.Is(err, contract.ErrEmpty) {
		fmt.Println(err)
	}
}

// readme is the README's shortest use, as it stands there.
func readme(ctx context.Context) error {
	b, err := backing.Open(ctx, backing.FromEnv(os.Getenv)) // ADK_REDIS_DSN, ADK_POSTGRES_DSN, else memory
	if err != nil {
		return err // names host:port and the cause; never the DSN or its password
	}
	defer b.Close()
	if b.Verdict != nil {
		return b.Verdict // Preflight (Redis) or Verify (PostgreSQL) refused the server, with the fix
	}
	leases, err := b.Queue.Claim(ctx, contract.ClaimRequest{Worker: "w1", LeaseFor: time.Minute, Max: 10})
	if err != nil {
		return err // contract.ErrEmpty when nothing is due
	}
	return b.Queue.Complete(ctx, leases...)
}
