package redisstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/redis/go-redis/v9"
)

// DefaultWaitTimeout bounds each WAIT when Settings.WaitReplicas is set
// and Settings.WaitTimeout is zero.
const DefaultWaitTimeout = time.Second

// ReplicaWaitError reports a write that the master applied but that fewer
// replicas than Settings.WaitReplicas acknowledged within
// Settings.WaitTimeout. Its durability is unknown: it survives unless the
// master fails before a replica has received it. The store hands it back
// wrapped in the operation's unavailable error (a
// *contract.QueueUnavailableError or *contract.StatePersistenceError,
// both retryable). Treat it as a write whose reply was lost: a settle or
// a patch may be repeated (a repeated Complete names the items it already
// completed as lost; a repeated PatchRun within its replay window is
// answered without adding twice), but a repeated Enqueue is a no-op only
// while the item still exists: once a worker has completed it, the same
// ID is enqueued anew and runs again. A producer that must not cause that
// leaves the enqueue as it is (it is on the master) or relies on an
// idempotent consumer, as for any at-least-once delivery. After a
// failover, read back what matters (Inspector.Item, GetRun).
type ReplicaWaitError struct {
	Want, Got int           // replicas asked for, replicas that acknowledged
	Timeout   time.Duration // how long the WAIT waited
}

func (e *ReplicaWaitError) Error() string {
	return fmt.Sprintf("redisstore: the write was applied on the master but acknowledged by %d of the %d replicas Settings.WaitReplicas asks for within %v (Settings.WaitTimeout): "+
		"it is lost if the master fails before a replica receives it; check the replicas' link (INFO replication) or lower Settings.WaitReplicas",
		e.Got, e.Want, e.Timeout)
}

// writeWait is how a store makes its writes wait for replicas.
type writeWait struct {
	replicas int
	timeout  time.Duration
}

func newWriteWait(c redis.UniversalClient, s Settings) (writeWait, error) {
	if s.WaitReplicas == 0 {
		return writeWait{}, nil
	}
	if _, ok := c.(*redis.Client); !ok {
		return writeWait{}, &contract.ValidationError{Field: "Settings.WaitReplicas", Problem: fmt.Sprintf(
			"is %d, but the client is a %T: a WAIT must follow the script on the same connection, which only a *redis.Client "+
				"(standalone, or Sentinel's failover client) guarantees; on a cluster set min-replicas-to-write on every master instead", s.WaitReplicas, c)}
	}
	return writeWait{replicas: s.WaitReplicas, timeout: s.WaitTimeout}, nil
}

// readOnly are the scripts that never write: no WAIT after them.
var readOnly = map[*redis.Script]bool{scriptDeadPage: true, scriptStateGet: true, scriptStateList: true}

// eval runs sc and, for a script that writes when replicas are asked
// for, WAITs in the same round trip on the same connection: WAIT counts
// the replicas that have this connection's writes.
func (w writeWait) eval(ctx context.Context, c redis.UniversalClient, sc *redis.Script, keys []string, args ...any) (any, error) {
	if w.replicas == 0 || readOnly[sc] {
		return sc.Run(ctx, c, keys, args...).Result()
	}
	run := func(eval func(redis.Pipeliner) *redis.Cmd) (*redis.Cmd, *redis.Cmd) {
		pipe := c.Pipeline()
		ev := eval(pipe)
		wt := pipe.Do(ctx, "WAIT", w.replicas, w.timeout.Milliseconds())
		_, _ = pipe.Exec(ctx)
		return ev, wt
	}
	ev, wt := run(func(p redis.Pipeliner) *redis.Cmd { return sc.EvalSha(ctx, p, keys, args...) })
	if err := ev.Err(); err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
		ev, wt = run(func(p redis.Pipeliner) *redis.Cmd { return sc.Eval(ctx, p, keys, args...) })
	}
	v, err := ev.Result()
	if err != nil {
		return v, err
	}
	n, err := wt.Int64()
	if err != nil {
		return v, err
	}
	if int(n) < w.replicas {
		return v, &ReplicaWaitError{Want: w.replicas, Got: int(n), Timeout: w.timeout}
	}
	return v, nil
}
