//go:build integration

package redisstore_test

import (
	"context"
	"errors"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/policy"
	"github.com/adkit/adk/modules/redisstore"
	"github.com/adkit/adk/modules/redisstore/redistest"
	"github.com/redis/go-redis/v9"
)

// stateFactory makes stores over client, each in a namespace of its own
// that is deleted when the subtest ends.
func stateFactory(client redis.UniversalClient) contracttest.StateFactory {
	return func(t *testing.T, clock contract.Clock, p contract.RunPolicy) contract.StateStore {
		s, err := redisstore.NewState(client, clock, redisstore.Settings{Namespace: redistest.Namespace(t, client), Runs: p})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}

func queueFactory(client redis.UniversalClient) contracttest.QueueFactory {
	return shardedFactory(client, 0)
}

// shardedFactory makes queues of the given number of shards (0 for the
// default, one).
func shardedFactory(client redis.UniversalClient, shards int) contracttest.QueueFactory {
	return func(t *testing.T, clock contract.Clock, p policy.Policy) contract.WorkQueue {
		ns := redistest.Namespace(t, client)
		q, err := redisstore.NewQueue(client, clock, redisstore.Settings{Namespace: ns, Policy: p, Shards: shards})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = q.Close() })
		return q
	}
}

func TestStateStoreConformance(t *testing.T) {
	contracttest.StateStore(t, stateFactory(redistest.Client(t)))
}

func TestWorkQueueConformance(t *testing.T) {
	contracttest.WorkQueue(t, queueFactory(redistest.Client(t)))
}

// TestShardedConformance runs the queue suite on three shards of one
// standalone server: every rule must hold with a queue spread over
// shards, whichever servers hold them.
func TestShardedConformance(t *testing.T) {
	contracttest.WorkQueue(t, shardedFactory(redistest.Client(t), 3))
}

// TestStateReplayConformance runs the lost-reply cases: the client's hook
// lets a state write run on the server, then throws its reply away and
// reports a broken connection, so the store's retry budget sends it again.
func TestStateReplayConformance(t *testing.T) {
	client := redistest.Client(t)
	hook := &lostReplies{armed: map[string]func(){}, lost: map[string]bool{}}
	client.AddHook(hook)
	contracttest.StateReplay(t, func(t *testing.T, clock contract.Clock) (contract.StateStore, contracttest.LoseReply) {
		ns := redistest.Namespace(t, client)
		s, err := redisstore.NewState(client, clock, redisstore.Settings{Namespace: ns})
		if err != nil {
			t.Fatal(err)
		}
		return s, func(between func()) func() bool { return hook.arm(ns, between) }
	})
}

// errReplyLost is what a connection cut after the request was sent
// looks like to the store: a transport error, retried within the budget.
var errReplyLost = errors.New("redis reply lost: " + io.ErrUnexpectedEOF.Error())

// lostReplies is a go-redis hook that loses the reply of the next state
// write script of an armed namespace, after the server ran it.
type lostReplies struct {
	mu    sync.Mutex
	armed map[string]func()
	lost  map[string]bool
}

func (l *lostReplies) arm(ns string, between func()) func() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.armed[ns], l.lost[ns] = between, false
	return func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.lost[ns]
	}
}

func (l *lostReplies) DialHook(next redis.DialHook) redis.DialHook { return next }

func (l *lostReplies) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (l *lostReplies) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if err := next(ctx, cmd); err != nil {
			return err // not run (NOSCRIPT, say): stay armed for the call that runs
		}
		ns, ok := stateWrite(cmd.Args())
		if !ok {
			return nil
		}
		l.mu.Lock()
		between := l.armed[ns]
		delete(l.armed, ns)
		l.lost[ns] = l.lost[ns] || between != nil
		l.mu.Unlock()
		if between == nil {
			return nil
		}
		between()
		cmd.SetErr(errReplyLost)
		return errReplyLost
	}
}

// stateWrite reports whether args are an FCALL, EVALSHA or EVAL of a state write
// script, and of which namespace: a script whose first key is a run blob
// and that declares more keys than the run's two (GetRun's script
// declares those two only, the listing's starts with a run hash).
func stateWrite(args []any) (string, bool) {
	if len(args) < 3 {
		return "", false
	}
	name, _ := args[0].(string)
	if name = strings.ToLower(name); name != "fcall" && name != "evalsha" && name != "eval" {
		return "", false
	}
	n, err := strconv.Atoi(fmtArg(args[2]))
	if err != nil || n < 3 || len(args) < 3+n {
		return "", false
	}
	ns, rest, found := strings.Cut(fmtArg(args[3]), ":state:")
	return ns, found && strings.Contains(rest, "}:run:")
}

func fmtArg(a any) string {
	switch v := a.(type) {
	case string:
		return v
	case int:
		return strconv.Itoa(v)
	case int64:
		return strconv.FormatInt(v, 10)
	}
	return ""
}

// TestWorkQueueConformanceUnderLimits runs the queue suite again with a
// default limits row on the default queue that never binds (a cap, a rate
// and a budget far above what any test does), so every claim there takes
// the flow path: it must behave exactly as the path without limits. The
// Flow area's own cases set the limits they test, so they get none here.
func TestWorkQueueConformanceUnderLimits(t *testing.T) {
	client := redistest.Client(t)
	loose := contract.Limits{MaxLeased: contract.MaxLimitLeased, Rate: contract.MaxRate,
		Budget: contract.Budget{CostMicros: 1 << 50, Window: time.Second}}
	contracttest.WorkQueue(t, func(t *testing.T, clock contract.Clock, p policy.Policy) contract.WorkQueue {
		q := queueFactory(client)(t, clock, p)
		if strings.Contains(t.Name(), "/Flow/") {
			return q
		}
		if err := q.(*redisstore.RedisWorkQueue).SetLimits(context.Background(), "", "", loose); err != nil {
			t.Fatal(err)
		}
		return q
	})
}
