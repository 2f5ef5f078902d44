package main

import (
	"context"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/memstore"
)

func newMemBacking(claimers, maxBatch int) backing {
	return &ourBacking{
		label: "memstore",
		open: func(ctx context.Context, conc int) (*instance, error) {
			s := memstore.New(nil, memstore.Settings{})
			return &instance{q: s, waker: s, close: func(context.Context) error { return nil }}, nil
		},
		openState: func(ctx context.Context, conc int, p contract.RunPolicy) (*stateInstance, error) {
			return &stateInstance{s: memstore.New(nil, memstore.Settings{Runs: p}), close: func(context.Context) error { return nil }}, nil
		},
		poll:     500 * time.Millisecond,
		claimers: claimers,
		maxBatch: maxBatch,
		chunk:    1000,
		loaders:  1,
	}
}
