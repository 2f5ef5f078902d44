package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
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

// writeWait is how a store runs its scripts: as functions or by
// EVALSHA (runMode), and, for the writes, waiting for replicas.
type writeWait struct {
	replicas int
	timeout  time.Duration
	mode     *runMode
}

// runMode is a store's choice between functions and EVALSHA, made at
// the first call: functions until loading one is refused. By EVALSHA a
// script carries its function's flags in a shebang line until a server
// refuses to compile one (before Redis 7).
type runMode struct {
	eval    atomic.Bool // set once the server refused to load a function
	noFlags atomic.Bool // set once the server refused a script's shebang
}

func newWriteWait(c redis.UniversalClient, s Settings) (writeWait, error) {
	w := writeWait{mode: &runMode{}}
	if s.Scripts == ScriptsEval {
		w.mode.eval.Store(true)
	}
	if s.WaitReplicas == 0 {
		return w, nil
	}
	if _, ok := c.(*redis.Client); !ok {
		return writeWait{}, &contract.ValidationError{Field: "Settings.WaitReplicas", Problem: fmt.Sprintf(
			"is %d, but the client is a %T: a WAIT must follow the script on the same connection, which only a *redis.Client "+
				"(standalone, or Sentinel's failover client) guarantees; on a cluster set min-replicas-to-write on every master instead", s.WaitReplicas, c)}
	}
	w.replicas, w.timeout = s.WaitReplicas, s.WaitTimeout
	return w, nil
}

// eval runs sc and, for a script that writes when replicas are asked
// for, WAITs in the same round trip on the same connection: WAIT counts
// the replicas that have this connection's writes.
//
// It calls sc's function; a server without it (a new server, one
// restarted without persistence, a cluster node that joined later) is
// given the library and called again. A server that refuses to load it
// (before Redis 7, or an ACL user without +function) turns the store to
// EVALSHA for good.
func (w writeWait) eval(ctx context.Context, c redis.UniversalClient, sc *script, keys []string, args ...any) (any, error) {
	if w.mode.eval.Load() {
		return w.evalFlagged(ctx, c, sc, keys, args...)
	}
	call := func(p redis.Cmdable) *redis.Cmd { return p.FCall(ctx, sc.fn, keys, args...) }
	v, err := w.send(ctx, c, sc.readOnly, call)
	if err == nil || !strings.Contains(err.Error(), "Function not found") {
		return v, err
	}
	if err := loadFunction(ctx, c, sc); err != nil {
		if strings.HasPrefix(err.Error(), "OOM") && sc.flagged != nil {
			// A full server loads no library, but it runs a script that
			// carries the function's flags: this call goes that way, and
			// the next one tries the function again.
			return w.evalSha(ctx, c, sc.flagged, sc.readOnly, keys, args...)
		}
		if !functionsRefused(err) {
			return nil, err
		}
		w.mode.eval.Store(true)
		return w.evalFlagged(ctx, c, sc, keys, args...)
	}
	return w.send(ctx, c, sc.readOnly, call)
}

// evalFlagged runs sc by EVALSHA with its function's flags (so that a
// full server still runs what drains it, as with functions), or without
// them on a server that cannot read them: the first script such a server
// refuses to compile turns the store to scripts without flags for good.
func (w writeWait) evalFlagged(ctx context.Context, c redis.UniversalClient, sc *script, keys []string, args ...any) (any, error) {
	if sc.flagged != nil && !w.mode.noFlags.Load() {
		v, err := w.evalSha(ctx, c, sc.flagged, sc.readOnly, keys, args...)
		if err == nil || !shebangRefused(err) {
			return v, err
		}
		w.mode.noFlags.Store(true)
	}
	return w.evalSha(ctx, c, sc.Script, sc.readOnly, keys, args...)
}

// evalSha runs src by EVALSHA, and by EVAL on a server without it
// cached; readOnly as the script's.
func (w writeWait) evalSha(ctx context.Context, c redis.UniversalClient, src *redis.Script, readOnly bool, keys []string, args ...any) (any, error) {
	v, err := w.send(ctx, c, readOnly, func(p redis.Cmdable) *redis.Cmd { return src.EvalSha(ctx, p, keys, args...) })
	if err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
		v, err = w.send(ctx, c, readOnly, func(p redis.Cmdable) *redis.Cmd { return src.Eval(ctx, p, keys, args...) })
	}
	return v, err
}

// send runs call alone, or followed by a WAIT in one round trip when the
// script writes (not readOnly) and the settings ask for replicas.
func (w writeWait) send(ctx context.Context, c redis.UniversalClient, readOnly bool, call func(redis.Cmdable) *redis.Cmd) (any, error) {
	if w.replicas == 0 || readOnly {
		return call(c).Result()
	}
	pipe := c.Pipeline()
	ev := call(pipe)
	wt := pipe.Do(ctx, "WAIT", w.replicas, w.timeout.Milliseconds())
	_, _ = pipe.Exec(ctx)
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

// loadFunction loads sc's library on every server a call may reach (on
// the one the client reaches when it is none of go-redis's own types).
func loadFunction(ctx context.Context, c redis.UniversalClient, sc *script) error {
	err := eachServer(ctx, c, func(ctx context.Context, n *redis.Client) error {
		return n.FunctionLoadReplace(ctx, sc.lib).Err()
	})
	if _, ok := errors.AsType[*clientTypeError](err); ok {
		return c.FunctionLoadReplace(ctx, sc.lib).Err()
	}
	return err
}

// clientTypeError is eachServer's answer for a client that is none of
// go-redis's own types: it cannot tell which servers that one reaches.
type clientTypeError struct{ client redis.UniversalClient }

func (e *clientTypeError) Error() string {
	return fmt.Sprintf("redisstore: the client is a %T; give a *redis.Client, *redis.ClusterClient or *redis.Ring", e.client)
}

// eachServer runs fn on the server c reaches, on every master of a
// cluster, or on every shard of a ring.
func eachServer(ctx context.Context, c redis.UniversalClient, fn func(context.Context, *redis.Client) error) error {
	switch cc := c.(type) {
	case *redis.ClusterClient:
		return cc.ForEachMaster(ctx, fn)
	case *redis.Ring:
		return cc.ForEachShard(ctx, fn)
	case *redis.Client:
		return fn(ctx, cc)
	}
	return &clientTypeError{client: c}
}

// functionsRefused reports whether err says the server will not load
// these functions at all: it does not know the command (before Redis 7),
// the user may not run it (ACL), or it cannot compile or register the
// library (a server whose Lua differs from Redis's). A transient error
// (a failover, a server still loading) is not a refusal: the call fails
// with it and is retried.
func functionsRefused(err error) bool {
	msg := err.Error()
	return strings.HasPrefix(msg, "NOPERM") || strings.Contains(msg, "unknown command") ||
		strings.Contains(msg, "Error registering functions") || strings.Contains(msg, "Error compiling function")
}

// shebangRefused reports whether err is a server's refusal to compile a
// script that starts with a shebang line: a server before Redis 7 reads
// the line as Lua, which it is not. The package's scripts compile
// everywhere else, so no other compile error is expected.
func shebangRefused(err error) bool {
	return strings.Contains(err.Error(), "Error compiling script")
}
