//go:build integration

package pgstore_test

import (
	"testing"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/claimcheck/claimchecktest"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/pgstore"
	"github.com/adkit/adk/modules/policy"
)

func TestStateStoreContract(t *testing.T) {
	contracttest.StateStore(t, func(t *testing.T, clock contract.Clock, p contract.RunPolicy) contract.StateStore {
		d := newTestDB(t)
		s, err := pgstore.NewState(d.pool, clock, pgstore.Settings{Runs: p})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestWorkQueueContract(t *testing.T) {
	contracttest.WorkQueue(t, func(t *testing.T, clock contract.Clock, p policy.Policy) contract.WorkQueue {
		d := newTestDB(t)
		q, err := pgstore.NewQueue(d.pool, clock, d.settings(pgstore.Settings{Policy: p, Listener: d.listener(t, pgstore.ListenerSettings{})}))
		if err != nil {
			t.Fatal(err)
		}
		return q
	})
}

func TestWorkQueueContractPollOnly(t *testing.T) {
	contracttest.WorkQueue(t, func(t *testing.T, clock contract.Clock, p policy.Policy) contract.WorkQueue {
		d := newTestDB(t)
		q, err := pgstore.NewQueue(d.pool, clock, d.settings(pgstore.Settings{Policy: p}))
		if err != nil {
			t.Fatal(err)
		}
		return q
	})
}

func TestClaimCheckContract(t *testing.T) {
	claimchecktest.ClaimCheck(t, func(t *testing.T) contract.ClaimCheck {
		d := newTestDB(t)
		b, err := pgstore.NewBlobStore(d.pool, pgstore.Settings{})
		if err != nil {
			t.Fatal(err)
		}
		return b
	})
}
