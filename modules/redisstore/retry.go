package redisstore

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/backoff"
)

// errKind sorts a failed call by what the caller should do about it.
type errKind int

const (
	kindFatal     errKind = iota // a reply or bug: report as is
	kindTransient                // the server is away: retry within the budget
	kindPool                     // the pool is exhausted: report at once
	kindFull                     // the server is out of memory: report at once as unavailable
	kindReplicas                 // a write too few replicas acknowledged: report at once as unavailable
)

// classify decides whether err is worth waiting out. Replies that mean the
// server is coming back (LOADING, READONLY after a failover, CLUSTERDOWN)
// are transient like a refused or dropped connection, and so are the
// replies of a cluster whose slots are moving: a redirect go-redis did
// not follow to the end (MOVED, ASK), TRYAGAIN while a slot's keys are
// split between two nodes, CROSSSLOT, and a script refused for a key not
// on the node it reached. Retrying those is safe because Redis refuses a
// script before it runs when any declared key is elsewhere, and every
// queue script declares its keys and makes its checks before its first
// write, so a refused script wrote nothing. Any other reply is a real
// answer.
func classify(err error) errKind {
	switch {
	case errors.Is(err, redis.ErrPoolTimeout):
		return kindPool
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded), errors.Is(err, redis.ErrClosed):
		return kindFatal
	}
	var rw *ReplicaWaitError
	if errors.As(err, &rw) {
		return kindReplicas // the script ran: trying it again would not change what the replicas hold
	}
	var pe *contract.PreflightError
	if errors.As(err, &pe) || errors.Is(err, contract.ErrInvalid) {
		return kindFatal // an answer about the configuration or the input, not an outage
	}
	var re redis.Error
	if errors.As(err, &re) {
		msg := re.Error()
		for _, p := range transientReplies {
			if strings.HasPrefix(msg, p) {
				return kindTransient
			}
		}
		for _, p := range transientScriptReplies {
			if strings.Contains(msg, p) {
				return kindTransient
			}
		}
		if strings.HasPrefix(msg, "OOM") {
			return kindFull
		}
		return kindFatal
	}
	return kindTransient
}

// transientReplies are the error prefixes of a server that is coming back
// or a cluster whose slots are moving.
var transientReplies = []string{
	"LOADING", "READONLY", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN", "NOREPLICAS", "ERR max number of clients",
	"MOVED ", "ASK ", "CROSSSLOT",
}

// transientScriptReplies are what Redis says, inside an ERR, when it stops
// a script at a command whose key is not served by this node (a slot
// migrating or just moved) or while the cluster is down.
var transientScriptReplies = []string{
	"Script attempted to access a non local key in a cluster node",
	"Script attempted to access keys that do not hash to the same slot",
	"Script attempted to execute a command while the cluster is down",
	"Script attempted to execute a write command while the cluster is down",
}

// retrier runs calls under a RetryBudget.
type retrier struct {
	budget RetryBudget
	// unavailable wraps the last transient error once the budget is spent.
	unavailable func(error) error
	// wait is what each write script waits for (Settings.WaitReplicas).
	wait writeWait
}

// newRetrier returns the retrier of a store over c with settings s
// (normalized).
func newRetrier(c redis.UniversalClient, s Settings, unavailable func(error) error) (retrier, error) {
	w, err := newWriteWait(c, s)
	return retrier{budget: s.RetryBudget, unavailable: unavailable, wait: w}, err
}

// eval runs a script once: with the WAIT the settings ask for after it
// when it writes.
func (r retrier) eval(ctx context.Context, c redis.UniversalClient, sc *script, keys []string, args ...any) (any, error) {
	return r.wait.eval(ctx, c, sc, keys, args...)
}

// do runs fn until it succeeds, fails for good, or the budget is spent.
// Only pass calls that are safe to repeat after a lost reply; see the
// notes on each operation.
func (r retrier) do(ctx context.Context, fn func(context.Context) error) error {
	retry := r.budget.schedule()
	var last error
	for {
		err := fn(ctx)
		if err == nil {
			return nil
		}
		switch classify(err) {
		case kindPool:
			return &contract.PoolExhaustedError{Backing: "redis", Err: err}
		case kindFull, kindReplicas:
			// A full server under noeviction refuses writes; waiting a few
			// seconds will not free memory, but the call may succeed once
			// an operator has.
			return r.unavailable(err)
		case kindFatal:
			if ctxErr := ctx.Err(); ctxErr != nil && last != nil {
				return r.unavailable(last)
			}
			return err
		}
		last = err
		wait, ok := retry.Next()
		if !ok || !backoff.Sleep(ctx, wait) {
			return r.unavailable(last)
		}
	}
}

// nonce returns 16 hex digits that identify one call across its retries.
func nonce() string {
	var b [8]byte
	_, _ = crand.Read(b[:]) // never fails (crypto/rand panics rather than return short)
	return hex.EncodeToString(b[:])
}

func stateUnavailable(err error) error {
	return &contract.StatePersistenceError{Reason: contract.ReasonUnavailable, Transient: true, Err: err}
}

func queueUnavailable(err error) error {
	return &contract.QueueUnavailableError{Err: err}
}
