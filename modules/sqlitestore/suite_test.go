package sqlitestore_test

import (
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/claimcheck/claimchecktest"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/policy"
	"github.com/adkit/adk/modules/sqlitestore"
)

// newFile opens a new file in the test's temporary directory, closed
// when the test ends.
func newFile(t testing.TB, s sqlitestore.Settings) *sql.DB {
	t.Helper()
	db, err := sqlitestore.OpenDB(filepath.Join(t.TempDir(), "adk.db"), s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := sqlitestore.Prepare(t.Context(), db, s); err != nil {
		t.Fatal(err)
	}
	return db
}

func TestStateStoreContract(t *testing.T) {
	t.Parallel() // the slowest tests of the package, each on files of its own
	contracttest.StateStore(t, func(t *testing.T, clock contract.Clock, p contract.RunPolicy) contract.StateStore {
		s, err := sqlitestore.NewState(newFile(t, sqlitestore.Settings{}), clock, sqlitestore.Settings{Runs: p})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestWorkQueueContract(t *testing.T) {
	t.Parallel() // the slowest tests of the package, each on files of its own
	contracttest.WorkQueue(t, func(t *testing.T, clock contract.Clock, p policy.Policy) contract.WorkQueue {
		s := sqlitestore.Settings{Policy: p}
		q, err := sqlitestore.NewQueue(newFile(t, s), clock, s)
		if err != nil {
			t.Fatal(err)
		}
		return q
	})
}

func TestClaimCheckContract(t *testing.T) {
	claimchecktest.ClaimCheck(t, func(t *testing.T) contract.ClaimCheck {
		b, err := sqlitestore.NewBlobStore(newFile(t, sqlitestore.Settings{}), nil)
		if err != nil {
			t.Fatal(err)
		}
		return b
	})
}
