package contracttest

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"sync"
	"testing"

	"github.com/adkit/adk/modules/contract"
)

// stateConcurrencyCases pin that concurrent writers never lose an update:
// patches all land, and optimistic puts admit exactly one writer per
// version.
func stateConcurrencyCases() []subtest[StateFactory] {
	return []subtest[StateFactory]{
		{"ConcurrentPatchesAllLand", testConcurrentPatches},
		{"ConcurrentPutsOneWinnerPerVersion", testConcurrentPuts},
		{"RacingCreatesOneWins", testRacingCreates},
		{"PatchesDuringPuts", testPatchesDuringPuts},
	}
}

// patchDelta is what every concurrent patch adds: distinct numbers per
// field, so a field written from another's delta shows.
var patchDelta = contract.Counters{InputTokens: 1, OutputTokens: 2, CostMicros: 3, Iterations: 4, Cursor: 5}

func scaled(c contract.Counters, n int64) contract.Counters {
	return contract.Counters{InputTokens: c.InputTokens * n, OutputTokens: c.OutputTokens * n,
		CostMicros: c.CostMicros * n, Iterations: c.Iterations * n, Cursor: c.Cursor * n}
}

func testConcurrentPatches(t *testing.T, f StateFactory) {
	const workers, each = 16, 25
	s, _ := newState(t, f)
	putOK(t, s, contract.Run{Tenant: "acme", ID: "hot", Data: json.RawMessage(`{"x":1}`)})
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		versions []int64
		errs     []error
	)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				r, err := s.PatchRun(t.Context(), "acme", "hot", contract.Patch{Counters: patchDelta, Status: fmt.Sprintf("w%d", w)})
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				} else {
					versions = append(versions, r.Version)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for _, err := range errs[:min(len(errs), 3)] {
		t.Errorf("concurrent PatchRun failed: %v", err)
	}
	got := getOK(t, s, "acme", "hot")
	if want := scaled(patchDelta, workers*each); got.Counters != want {
		t.Errorf("after %d concurrent patches Counters = %+v, want %+v (a delta was lost)", workers*each, got.Counters, want)
	}
	if got.Version != 1+workers*each {
		t.Errorf("after %d patches Version = %d, want %d", workers*each, got.Version, 1+workers*each)
	}
	sameJSON(t, "Data after concurrent patches", got.Data, json.RawMessage(`{"x":1}`))
	sort.Slice(versions, func(i, j int) bool { return versions[i] < versions[j] })
	for i, v := range versions {
		if v != int64(i)+2 {
			t.Errorf("the patches returned versions %v...; each patch returns the run as it stored it, so they must be 2..%d, each once",
				versions[max(0, i-2):min(len(versions), i+3)], 1+workers*each)
			break
		}
	}
}

// casIncrement reads the run, adds one to Data.n and puts it back holding
// the version it read, retrying on conflict. It returns the conflicts seen.
func casIncrement(t *testing.T, s contract.StateStore, tenant, id string) (int, error) {
	conflicts := 0
	for range 10000 {
		r, err := s.GetRun(t.Context(), tenant, id)
		if err != nil {
			return conflicts, err
		}
		var doc struct{ N int }
		if err := json.Unmarshal(r.Data, &doc); err != nil {
			return conflicts, fmt.Errorf("stored Data %s: %w", r.Data, err)
		}
		doc.N++
		r.Data, _ = json.Marshal(doc)
		// A network round trip sits here in a real backing; yield so that
		// an in-process one sees writers interleave too.
		runtime.Gosched()
		_, err = s.PutRun(t.Context(), *r)
		var ce *contract.StateConflictError
		if errors.As(err, &ce) {
			conflicts++
			continue
		}
		return conflicts, err
	}
	return conflicts, errors.New("no put succeeded in 10000 tries")
}

func testConcurrentPuts(t *testing.T, f StateFactory) {
	const workers, each = 8, 10
	s, _ := newState(t, f)
	putOK(t, s, contract.Run{Tenant: "acme", ID: "cas", Data: json.RawMessage(`{"N":0}`)})
	var wg sync.WaitGroup
	errc := make(chan error, workers*each)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				if _, err := casIncrement(t, s, "acme", "cas"); err != nil {
					errc <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Errorf("read-modify-write loop failed: %v", err)
	}
	got := getOK(t, s, "acme", "cas")
	sameJSON(t, "Data after concurrent optimistic increments (a put holding a stale version was accepted)", got.Data,
		json.RawMessage(fmt.Sprintf(`{"N":%d}`, workers*each)))
	if got.Version != 1+workers*each {
		t.Errorf("Version = %d after %d successful puts, want %d", got.Version, workers*each, 1+workers*each)
	}
}

func testRacingCreates(t *testing.T, f StateFactory) {
	const workers = 8
	s, _ := newState(t, f)
	var wg sync.WaitGroup
	results := make([]error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, results[w] = s.PutRun(t.Context(), contract.Run{Tenant: "acme", ID: "once", Data: json.RawMessage(fmt.Sprint(w))})
		}()
	}
	wg.Wait()
	winners := 0
	winner := -1
	for w, err := range results {
		if err == nil {
			winners++
			winner = w
			continue
		}
		wantConflict(t, err, 0, 1, "a losing create")
	}
	if winners != 1 {
		t.Fatalf("%d of %d racing creates succeeded, want exactly 1", winners, workers)
	}
	got := getOK(t, s, "acme", "once")
	sameJSON(t, "Data after racing creates (the winner's)", got.Data, json.RawMessage(fmt.Sprint(winner)))
	if got.Version != 1 {
		t.Errorf("Version after racing creates = %d, want 1", got.Version)
	}
}

func testPatchesDuringPuts(t *testing.T, f StateFactory) {
	const patchers, patches, putters, puts = 8, 10, 4, 10
	s, _ := newState(t, f)
	putOK(t, s, contract.Run{Tenant: "acme", ID: "mixed", Data: json.RawMessage(`{"N":0}`)})
	var wg sync.WaitGroup
	errc := make(chan error, patchers*patches+putters*puts)
	for range patchers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range patches {
				if _, err := s.PatchRun(t.Context(), "acme", "mixed", contract.Patch{Counters: patchDelta}); err != nil {
					errc <- err
				}
			}
		}()
	}
	for range putters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range puts {
				if _, err := casIncrement(t, s, "acme", "mixed"); err != nil {
					errc <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Errorf("concurrent write failed: %v", err)
	}
	got := getOK(t, s, "acme", "mixed")
	if want := scaled(patchDelta, patchers*patches); got.Counters != want {
		t.Errorf("Counters = %+v, want %+v: a put overwrote counters or a patch was lost", got.Counters, want)
	}
	sameJSON(t, "Data after mixed writes", got.Data, json.RawMessage(fmt.Sprintf(`{"N":%d}`, putters*puts)))
	if want := int64(1 + patchers*patches + putters*puts); got.Version != want {
		t.Errorf("Version = %d, want %d (one per write)", got.Version, want)
	}
}
