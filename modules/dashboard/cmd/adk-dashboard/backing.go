package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/adkit/adk/modules/backing"
	"github.com/adkit/adk/modules/contract"
)

// openBacking opens the backing as every command of the kit does. Redis
// opens whatever its preflight says: the health page shows the verdict
// and its fix. PostgreSQL must pass Verify and a SQLite file Prepare,
// because the pages cannot read tables that are not there.
func openBacking(ctx context.Context, c backing.Config) (*backing.Backing, error) {
	b, err := backing.Open(ctx, c)
	if err != nil {
		return nil, err
	}
	if (b.Name != backing.PostgreSQL && b.Name != backing.SQLite) || b.Verdict == nil {
		return b, nil
	}
	_ = b.Close()
	if b.Name == backing.SQLite {
		return nil, b.Verdict
	}
	if _, ok := errors.AsType[*contract.SchemaError](b.Verdict); ok {
		// The command cannot tell whether make started it, so the hint
		// gives both spellings.
		return nil, fmt.Errorf("%w (on a development database, add --apply-schema to apply it; through make: DEMO_FLAGS=--apply-schema make demo)", b.Verdict)
	}
	return nil, b.Verdict
}
