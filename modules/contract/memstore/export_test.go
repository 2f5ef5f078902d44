package memstore

import (
	"fmt"
	"strings"

	"github.com/adkit/adk/modules/contract"
)

// mutationNames names the deliberate faults of mutation.go for the tests.
var mutationNames = map[string]mutation{
	"no-fencing":              mutNoFencing,
	"no-rotation":             mutNoRotation,
	"lost-patch":              mutLostPatch,
	"reseq-on-write":          mutReseqOnWrite,
	"reap-ignores-heartbeat":  mutReapIgnoresHeartbeat,
	"joined-keys":             mutJoinedKeys,
	"ignore-not-before":       mutIgnoreNotBefore,
	"enqueue-replaces":        mutEnqueueReplaces,
	"attempt-token":           mutAttemptToken,
	"racy-claim":              mutRacyClaim,
	"all-or-nothing-complete": mutAllOrNothingComplete,
	"requeue-ignores-error":   mutRequeueIgnoresError,
	"dead-paging-repeats":     mutDeadPagingRepeats,
	"ignore-context":          mutIgnoreContext,
	"delayed-loses-place":     mutDelayedLosesPlace,
	"wrap-counters":           mutWrapCounters,
}

// NewMutant returns a store carrying the deliberate faults named in
// names (comma-separated), for the mutation table of mutation_test.go.
func NewMutant(clock contract.Clock, names string, opts ...Option) (*Store, error) {
	s := New(clock, opts...)
	for name := range strings.SplitSeq(names, ",") {
		m, ok := mutationNames[name]
		if !ok {
			return nil, fmt.Errorf("memstore: no mutation called %q", name)
		}
		s.mutations |= m
	}
	return s, nil
}
