package oracle

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/adkit/adk/modules/contract"
)

// Tenants of the load. Names with ':' and braces are valid and must never
// collide with one another; "noisy" gets half the items.
var Tenants = []string{"noisy", "acme", "a:b", "a", "{x}", "ünï"}

// AcctID is the run of each tenant every execution patches: the shared
// tally whose counters must equal the sum of the patches that landed.
const AcctID = "acct"

// FxID is the per-item run an execution patches first: its Iterations
// count the executions that reached the store.
func FxID(itemID string) string { return "fx/" + itemID }

// Spec is one planned item.
type Spec struct {
	Tenant string
	ID     string
	N      int  // its index: the deltas derive from it
	Poison bool // its handler fails permanently: it must end dead
	// Waits: its handler first waits for WaitSignal (lifecycle load).
	Waits bool
	// Cancel: the parent cancels it while the load runs (lifecycle load).
	Cancel bool
}

// Key is the item's identity in the default queue.
func (s Spec) Key() contract.ItemKey {
	return contract.ItemKey{Tenant: s.Tenant, Queue: contract.DefaultQueue, ID: s.ID}
}

// Payload is what an item carries to its handler.
type Payload struct {
	N      int  `json:"n"`
	Poison bool `json:"poison,omitempty"`
	Wait   bool `json:"wait,omitempty"`
}

// Delta is what one execution of item n adds to the counters of its run
// and of its tenant's tally: distinct per item, so a patch counted twice
// or not at all shows in the sums.
func Delta(n int) contract.Counters {
	return contract.Counters{Iterations: 1, OutputTokens: int64(1 + n%17), CostMicros: int64(1000 + 7*n)}
}

// PoisonEvery makes every PoisonEvery-th item a poison item.
const PoisonEvery = 41

// Plan returns k items: half to "noisy", the rest spread over the other
// tenants; every PoisonEvery-th is poison.
func Plan(k int) []Spec {
	out := make([]Spec, 0, k)
	for n := range k {
		tenant := Tenants[0]
		if n%2 == 1 {
			tenant = Tenants[1+(n/2)%(len(Tenants)-1)]
		}
		out = append(out, Spec{Tenant: tenant, ID: "item:" + strconv.Itoa(n), N: n, Poison: n%PoisonEvery == PoisonEvery-1})
	}
	return out
}

// Seed creates every tenant's tally and every item's run, then enqueues
// the items, in batches.
func Seed(ctx context.Context, s *Stores, specs []Spec) error {
	if err := SeedRuns(ctx, s, specs); err != nil {
		return err
	}
	return Enqueue(ctx, s, specs)
}

// SeedRuns creates every tenant's tally, logs and slot (for the state
// load) and every item's run.
func SeedRuns(ctx context.Context, s *Stores, specs []Spec) error {
	for _, tenant := range Tenants {
		if _, err := s.State.PutRun(ctx, contract.Run{Tenant: tenant, ID: AcctID, Status: "open", Data: json.RawMessage(`{"kind":"tally"}`)}); err != nil {
			return fmt.Errorf("seed tally %q: %w", tenant, err)
		}
		for i := range Logs {
			if _, err := s.State.PutRun(ctx, contract.Run{Tenant: tenant, ID: LogID(i), Data: json.RawMessage(`[]`)}); err != nil {
				return fmt.Errorf("seed log %d of %q: %w", i, tenant, err)
			}
		}
		if _, err := s.State.PutRun(ctx, contract.Run{Tenant: tenant, ID: SlotID, Data: json.RawMessage(`"` + seedHolder + `"`)}); err != nil {
			return fmt.Errorf("seed slot of %q: %w", tenant, err)
		}
	}
	for _, sp := range specs {
		if _, err := s.State.PutRun(ctx, contract.Run{Tenant: sp.Tenant, ID: FxID(sp.ID), Session: "oracle", Data: json.RawMessage(`{}`)}); err != nil {
			return fmt.Errorf("seed run %q/%q: %w", sp.Tenant, sp.ID, err)
		}
	}
	return nil
}

// Enqueue enqueues the items, in batches.
func Enqueue(ctx context.Context, s *Stores, specs []Spec) error {
	const batch = 100
	for i := 0; i < len(specs); i += batch {
		var items []contract.Item
		for _, sp := range specs[i:min(i+batch, len(specs))] {
			p, _ := json.Marshal(Payload{N: sp.N, Poison: sp.Poison, Wait: sp.Waits})
			items = append(items, contract.Item{Tenant: sp.Tenant, ID: sp.ID, Payload: p, Metadata: map[string]string{"oracle": "1"}})
		}
		if err := s.Queue.Enqueue(ctx, items...); err != nil {
			return fmt.Errorf("enqueue: %w", err)
		}
	}
	return nil
}
