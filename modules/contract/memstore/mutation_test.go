package memstore_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// mutants is the mutation table: each row breaks memstore on purpose in one
// way (see mutation.go) and names the conformance-suite point that must
// catch it. TestMutantsAreCaught runs that point against the broken store
// in a subprocess and requires it to fail, which proves the point can
// fail; the control row runs every listed point against the intact store
// and requires them to pass, which proves the failures come from the
// mutations.
var mutants = []struct {
	mutation string
	caughtBy string // the suite point, as TestX/Group/Point
	why      string
}{
	{
		mutation: "no-fencing",
		caughtBy: "TestWorkQueue/Basic/BatchCompletePartialLoss",
		why:      "settles ignore the token, so a stale lease completes the item",
	},
	{
		mutation: "no-rotation",
		caughtBy: "TestWorkQueue/Fairness/SmallTenantsServedEarly",
		why:      "a claim serves the head tenant until it runs dry, so a backlog starves its neighbours",
	},
	{
		mutation: "lost-patch",
		caughtBy: "TestStateStore/Concurrency/ConcurrentPatchesAllLand",
		why:      "PatchRun reads and writes in two critical sections, so concurrent deltas overwrite each other",
	},
	{
		mutation: "reseq-on-write",
		caughtBy: "TestStateStore/Paging/StableWhileUpdating",
		why:      "every write moves the run to a new Seq, so a listing repeats the runs updated while it pages",
	},
	{
		mutation: "joined-keys",
		caughtBy: "TestStateStore/Isolation/HostileNamesNeverCollide",
		why:      `runs are keyed by tenant+":"+id, so tenant "a" run "b:x" is tenant "a:b" run "x"`,
	},
	{
		mutation: "ignore-not-before",
		caughtBy: "TestWorkQueue/Basic/DelayedNotClaimedEarly",
		why:      "delayed items are claimable at once",
	},
	{
		mutation: "enqueue-replaces",
		caughtBy: "TestWorkQueue/Basic/IdempotentEnqueueQueued",
		why:      "enqueueing a live ID replaces the queued item",
	},
}

func TestMutantsAreCaught(t *testing.T) {
	if os.Getenv(mutationEnv) != "" {
		t.Skip("running inside a mutant subprocess")
	}
	var all []string
	for _, m := range mutants {
		all = append(all, m.caughtBy)
		t.Run(m.mutation, func(t *testing.T) {
			out, err := runSuitePoint(t, m.mutation, m.caughtBy)
			if !bytes.Contains(out, []byte("=== RUN   "+m.caughtBy+"\n")) {
				t.Fatalf("suite point %s did not run: renamed or removed? Its output:\n%s", m.caughtBy, out)
			}
			var exit *exec.ExitError
			if !errors.As(err, &exit) {
				t.Fatalf("mutant %s survived %s (%s); its output:\n%s", m.mutation, m.caughtBy, m.why, out)
			}
			if !bytes.Contains(out, []byte("--- FAIL: "+m.caughtBy+" ")) {
				t.Fatalf("mutant %s made the run fail, but not at %s; its output:\n%s", m.mutation, m.caughtBy, out)
			}
		})
	}
	t.Run("control", func(t *testing.T) {
		out, err := runSuitePoint(t, "", all...)
		if err != nil {
			t.Fatalf("the intact store fails the points of the mutation table: %v\n%s", err, out)
		}
		for _, p := range all {
			if !bytes.Contains(out, []byte("--- PASS: "+p+" ")) {
				t.Errorf("the control run did not pass %s; its output:\n%s", p, out)
			}
		}
	})
}

// runSuitePoint runs the given suite points in a subprocess of this test
// binary whose stores carry the mutation.
func runSuitePoint(t *testing.T, mutation string, points ...string) ([]byte, error) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run="+runPattern(points), "-test.count=1", "-test.v")
	// A race-enabled binary otherwise lingers a second at exit.
	gorace := strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=0")
	cmd.Env = append(os.Environ(), mutationEnv+"="+mutation, "GORACE="+gorace)
	return cmd.CombinedOutput()
}

// runPattern turns suite points into one -test.run pattern. The testing
// package splits a pattern at top-level bars before it splits at slashes,
// so each point stays a path of its own.
func runPattern(points []string) string {
	alts := make([]string, len(points))
	for i, p := range points {
		alts[i] = "^" + strings.ReplaceAll(p, "/", "$/^") + "$"
	}
	return strings.Join(alts, "|")
}
