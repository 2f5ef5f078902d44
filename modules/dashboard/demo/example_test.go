package demo_test

import (
	"context"
	"time"

	"github.com/adkit/adk/modules/contract/memstore"
	"github.com/adkit/adk/modules/dashboard/demo"
)

// Run a small workload for a few seconds against an in-memory store; a
// dashboard over the same store shows it. (No output: the workload is
// random and runs on real time.)
func ExampleRun() {
	store := memstore.New(nil, memstore.Settings{})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_ = demo.Run(ctx, demo.Config{Queue: store, Tenants: 5, Backlog: 500})
}
