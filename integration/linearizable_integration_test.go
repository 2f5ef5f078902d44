//go:build integration

package integration

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/adkit/adk/integration/internal/oracle"
	"github.com/adkit/adk/integration/internal/proxy"
	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/memstore"
	"github.com/adkit/adk/modules/pgstore"
	"github.com/adkit/adk/modules/pgstore/pgstoretest"
	"github.com/adkit/adk/modules/redisstore"
	"github.com/adkit/adk/modules/redisstore/redistest"
)

// The linearizability check of the state store. Eight clients run gets,
// versioned puts, patches and deletes against four runs of one tenant;
// every call's invocation, outcome and return are recorded, and porcupine
// looks for one order of the calls, each taking effect at an instant
// within its own interval, that explains every outcome by the sequential
// model of a run below. A call that failed (unavailable, timed out, cut)
// may or may not have taken effect: it is left open until the end of the
// history, so the checker may place it anywhere after its invocation,
// including after everything (not applied at all).
//
// The model is strict: a conflict must report the version stored at the
// instant the check failed, a put returns what it wrote, a patch the
// version, counters and status it left, a delete of an existing run
// succeeds. The one field it does not compare is the Data returned by a
// patch: redisstore documents that a patch answered from its replay record
// after a lost reply carries the Data stored at the retry, which a put may
// have rewritten in between (the Data of every get and put is compared).

const (
	linClients = 8
	linRuns    = 4
	// linOpsPerClient caps a row's history, which keeps the check to
	// seconds; the row's duration caps it on the slower backings.
	linOpsPerClient = 1000
)

// linKind is what a call does.
type linKind int

const (
	linGet linKind = iota
	linPut
	linPatch
	linDelete
)

func (k linKind) String() string { return [...]string{"get", "put", "patch", "delete"}[k] }

// linInput is one call: its run, and for puts the version held, the data
// and the status; for patches the status ("" keeps it).
type linInput struct {
	run     int
	kind    linKind
	version int64
	data    string
	status  string
}

// linRun is the model's state of one run, and what a successful call
// reports of it.
type linRun struct {
	exists  bool
	version int64
	data    string
	status  string
	count   int64 // Counters.Iterations: each patch adds 1
}

// linOutput is a call's outcome.
type linOutput struct {
	unknown  bool // failed: may or may not have taken effect
	notFound bool
	conflict bool
	actual   int64 // the conflict's stored version
	run      linRun
}

// linModel is the sequential specification of one run; the history is
// partitioned by run.
var linModel = porcupine.Model{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		parts := make([][]porcupine.Operation, linRuns)
		for _, op := range h {
			r := op.Input.(linInput).run
			parts[r] = append(parts[r], op)
		}
		return parts
	},
	Init: func() any { return linRun{} },
	Step: func(state, input, output any) (bool, any) {
		s, in, out := state.(linRun), input.(linInput), output.(linOutput)
		next, res := linApply(s, in)
		if out.unknown {
			return true, next
		}
		switch {
		case res.notFound || out.notFound:
			return res.notFound == out.notFound && !out.conflict, next
		case res.conflict || out.conflict:
			return res.conflict && out.conflict && res.actual == out.actual, next
		case in.kind == linPatch:
			got, want := out.run, res.run
			got.data, want.data = "", ""
			return got == want, next
		case in.kind == linDelete:
			return true, next
		}
		return out.run == res.run, next
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(linInput), output.(linOutput)
		var call string
		switch in.kind {
		case linPut:
			call = fmt.Sprintf("put(v%d, %s, %q)", in.version, in.data, in.status)
		case linPatch:
			call = fmt.Sprintf("patch(+1, %q)", in.status)
		default:
			call = in.kind.String() + "()"
		}
		return fmt.Sprintf("run%d %s -> %s", in.run, call, out)
	},
	DescribeState: func(state any) string { return state.(linRun).String() },
}

// linApply is one call on the model: the next state and the outcome the
// call must report.
func linApply(s linRun, in linInput) (linRun, linOutput) {
	switch in.kind {
	case linGet:
		if !s.exists {
			return s, linOutput{notFound: true}
		}
		return s, linOutput{run: s}
	case linPut:
		if (in.version == 0 && s.exists) || (in.version != 0 && (!s.exists || in.version != s.version)) {
			return s, linOutput{conflict: true, actual: s.version}
		}
		n := linRun{exists: true, version: s.version + 1, data: in.data, status: in.status, count: s.count}
		return n, linOutput{run: n}
	case linPatch:
		if !s.exists {
			return s, linOutput{notFound: true}
		}
		n := s
		n.version++
		n.count++
		if in.status != "" {
			n.status = in.status
		}
		return n, linOutput{run: n}
	default:
		if !s.exists {
			return s, linOutput{notFound: true}
		}
		return linRun{}, linOutput{}
	}
}

func (r linRun) String() string {
	if !r.exists {
		return "absent"
	}
	return fmt.Sprintf("v%d %s %q n=%d", r.version, r.data, r.status, r.count)
}

func (o linOutput) String() string {
	switch {
	case o.unknown:
		return "unknown"
	case o.notFound:
		return "not found"
	case o.conflict:
		return fmt.Sprintf("conflict(stored %d)", o.actual)
	}
	return o.run.String()
}

// linTarget is one row: a backing, a fault, and how to reach it.
type linTarget struct {
	backing, fault string
	// open returns a client's own store.
	open func(t *testing.T) contract.StateStore
	// inject breaks things while the load runs, until stop closes; it
	// returns what it did.
	inject func(stop <-chan struct{}) string
}

// linReport is the verdict of one row.
type linReport struct {
	ops, unknown int
	violations   int // outcomes that had to be disregarded to linearize the rest
	examples     []string
	checked      time.Duration
	undecided    bool
	uncounted    bool // the count stopped at its time limit: at least violations
}

func TestStateLinearizable(t *testing.T) {
	began := time.Now()
	var rows []string
	for _, backing := range []string{"memstore", oracle.Redis, linCluster, oracle.Postgres} {
		faults := []string{"none", "restarts", "cuts"}
		switch backing {
		case "memstore":
			faults = faults[:1]
		case linCluster:
			faults = []string{"reshard"}
		}
		for _, fault := range faults {
			t.Run(backing+"/"+fault, func(t *testing.T) {
				target := linSetup(t, backing, fault)
				load := 2 * time.Second
				if fault != "none" {
					load = 3 * time.Second
				}
				h, did := linLoad(t, target, load)
				rep := linCheck(h)
				count := fmt.Sprint(rep.violations)
				if rep.uncounted {
					count = "at least " + count
				}
				t.Logf("%s/%s: %d ops (%d with an unknown outcome), %s; checked in %v: %s violations",
					backing, fault, rep.ops, rep.unknown, did, rep.checked.Round(time.Millisecond), count)
				for _, e := range rep.examples {
					t.Logf("  violation: %s", e)
				}
				rows = append(rows, fmt.Sprintf("| %s | %s | %d | %d | %s | %v |", backing, fault, rep.ops, rep.unknown, count, rep.checked.Round(time.Millisecond)))
				if rep.undecided {
					t.Errorf("porcupine could not decide within its time limit")
				}
				if rep.violations > 0 {
					t.Errorf("not linearizable: %s call outcomes no order of the calls explains (examples above)", count)
				}
			})
		}
	}
	t.Logf("linearizability, all rows in %v:\n| backing | fault | ops | unknown | violations | check |\n|---|---|---|---|---|---|\n%s",
		time.Since(began).Round(100*time.Millisecond), strings.Join(rows, "\n"))
}

// linCluster is the row of a three-master Redis Cluster whose slot of
// the runs' tenant moves back and forth under the load.
const linCluster = "redis-cluster"

// linSetup starts what a row needs and returns how its clients connect
// and how its fault is made.
func linSetup(t *testing.T, backing, fault string) linTarget {
	t.Helper()
	target := linTarget{backing: backing, fault: fault}
	switch backing {
	case "memstore":
		mem := memstore.New(contract.SystemClock{}, memstore.Settings{})
		target.open = func(*testing.T) contract.StateStore { return mem }
	case oracle.Redis:
		srv := redistest.StartServer(t, "--appendonly", "yes", "--appendfsync", "always")
		addr := srv.Addr()
		if fault == "cuts" {
			px := linProxy(t, addr)
			addr = px.Addr()
			target.inject = func(stop <-chan struct{}) string { return linCuts(px, stop) }
		}
		if fault == "restarts" {
			target.inject = func(stop <-chan struct{}) string {
				n := 0
				for linPause(stop, 900*time.Millisecond) {
					srv.Kill()
					time.Sleep(100 * time.Millisecond)
					srv.Start()
					n++
				}
				return fmt.Sprintf("redis-server (appendfsync always) SIGKILLed and restarted %d times", n)
			}
		}
		target.open = func(t *testing.T) contract.StateStore {
			c := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second})
			t.Cleanup(func() { _ = c.Close() })
			s, err := redisstore.NewState(c, contract.SystemClock{}, redisstore.Settings{Namespace: "lin"})
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
	case linCluster:
		cl := redistest.StartCluster(t, 3)
		slot := redistest.Slot("lin:state:{3:lin}:runs")
		target.inject = func(stop <-chan struct{}) string {
			moves, keys := 0, 0
			for linPause(stop, 50*time.Millisecond) {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				owner, err := cl.Owner(ctx, slot)
				var n int
				if err == nil {
					var mv *redistest.SlotMove
					if mv, err = cl.NewSlotMove(ctx, slot, (owner+1)%len(cl.Nodes)); err == nil {
						n, err = mv.Run(ctx)
					}
				}
				cancel()
				if err != nil {
					t.Errorf("move %d of slot %d did not complete: %v", moves+1, slot, err)
					break
				}
				moves++
				keys += n
			}
			if moves < 5 {
				t.Errorf("only %d moves of the tenant's slot during the load; want at least 5", moves)
			}
			return fmt.Sprintf("%d moves of the tenant's slot %d between 3 masters (%d keys migrated)", moves, slot, keys)
		}
		target.open = func(t *testing.T) contract.StateStore {
			s, err := redisstore.NewState(cl.Client(t, nil), contract.SystemClock{}, redisstore.Settings{Namespace: "lin"})
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
	case oracle.Postgres:
		pg := privatePG(t)
		schema := pgstoretest.TestSchema(t, pg.DSN(), nil)
		var via *proxy.Proxy
		if fault == "cuts" {
			px := linProxy(t, fmt.Sprintf("127.0.0.1:%d", pg.Port))
			via = px
			target.inject = func(stop <-chan struct{}) string { return linCuts(px, stop) }
		}
		if fault == "restarts" {
			target.inject = func(stop <-chan struct{}) string {
				if !linPause(stop, time.Second) {
					return "no restart"
				}
				began := time.Now()
				if err := pg.StopImmediate(); err != nil {
					return err.Error()
				}
				if err := pg.Start(); err != nil {
					return err.Error()
				}
				return fmt.Sprintf("pg_ctl stop -m immediate and start, back after %v", time.Since(began).Round(time.Millisecond))
			}
		}
		target.open = func(t *testing.T) contract.StateStore {
			pool := schema.Pool(t, func(c *pgxpool.Config) {
				c.MaxConns = 2
				c.ConnConfig.ConnectTimeout = time.Second
				if via != nil {
					c.ConnConfig.Host, c.ConnConfig.Port = "127.0.0.1", uint16(via.Port())
				}
			})
			s, err := pgstore.NewState(pool, contract.SystemClock{}, pgstore.Settings{})
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
	}
	return target
}

func linProxy(t *testing.T, upstream string) *proxy.Proxy {
	t.Helper()
	px, err := proxy.Start(upstream)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = px.Close() })
	return px
}

func linCuts(px *proxy.Proxy, stop <-chan struct{}) string {
	px.CutEvery(200*time.Millisecond, nil)
	<-stop
	px.StopCutting()
	cuts, severed, _ := px.Stats()
	return fmt.Sprintf("%d cuts every 200ms severing %d connections", cuts, severed)
}

// linPause waits d, or reports false when stop closes first.
func linPause(stop <-chan struct{}, d time.Duration) bool {
	select {
	case <-stop:
		return false
	case <-time.After(d):
		return true
	}
}

// linLoad runs the clients for d and returns the history and what the
// fault did.
func linLoad(t *testing.T, target linTarget, d time.Duration) ([]porcupine.Operation, string) {
	t.Helper()
	stores := make([]contract.StateStore, linClients)
	for i := range stores {
		stores[i] = target.open(t)
	}
	start := time.Now()
	now := func() int64 { return int64(time.Since(start)) }
	stop := make(chan struct{})
	did := "no fault"
	var injected sync.WaitGroup
	if target.inject != nil {
		injected.Go(func() { did = target.inject(stop) })
	}
	histories := make([][]porcupine.Operation, linClients)
	var wg sync.WaitGroup
	for c := range linClients {
		wg.Go(func() {
			histories[c] = linClient(t, c, stores[c], now, start.Add(d))
		})
	}
	wg.Wait()
	close(stop)
	injected.Wait()
	var h []porcupine.Operation
	for _, part := range histories {
		h = append(h, part...)
	}
	return h, did
}

// linClient is one client's loop until the deadline.
func linClient(t *testing.T, c int, s contract.StateStore, now func() int64, until time.Time) []porcupine.Operation {
	rng := rand.New(rand.NewPCG(uint64(c), 13))
	// seen is the version this client last saw of each run (0: absent).
	var seen [linRuns]int64
	var out []porcupine.Operation
	for n := 0; n < linOpsPerClient && time.Now().Before(until); n++ {
		in := linInput{run: rng.IntN(linRuns)}
		switch p := rng.IntN(100); {
		case p < 30:
			in.kind = linGet
		case p < 62:
			in.kind = linPut
			in.version = seen[in.run]
			if rng.IntN(8) == 0 {
				in.version = int64(rng.IntN(4))
			}
			in.data = fmt.Sprintf(`"c%dn%d"`, c, n)
			in.status = fmt.Sprintf("put%d", c)
		case p < 87:
			in.kind = linPatch
			if rng.IntN(2) == 0 {
				in.status = fmt.Sprintf("patch%d", c)
			}
		default:
			in.kind = linDelete
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		call := now()
		res, err := linCall(ctx, s, in)
		ret := now()
		cancel()
		outc, fatal := linOutcome(res, err)
		if fatal != nil {
			t.Errorf("client %d: %s: %v", c, in.kind, fatal)
			return out
		}
		if outc.unknown {
			// Left open to the end: the checker may place it anywhere
			// after its call, or nowhere. The client then waits until the
			// store answers again, as a worker backing off would, rather
			// than pile up calls whose outcome nobody can know.
			linAwait(s, in.run, until)
			if in.kind == linGet {
				continue // a failed read changed nothing
			}
			ret = math.MaxInt64
		}
		switch {
		case outc.run.exists:
			seen[in.run] = outc.run.version
		case outc.notFound || (in.kind == linDelete && !outc.unknown):
			seen[in.run] = 0
		case outc.conflict:
			seen[in.run] = outc.actual
		}
		out = append(out, porcupine.Operation{ClientId: c, Input: in, Call: call, Output: outc, Return: ret})
	}
	return out
}

// linAwait polls the run until a read succeeds or the load ends.
func linAwait(s contract.StateStore, run int, until time.Time) {
	for time.Now().Before(until) {
		time.Sleep(20 * time.Millisecond)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := s.GetRun(ctx, "lin", fmt.Sprintf("run%d", run))
		cancel()
		if err == nil || errors.Is(err, contract.ErrNotFound) {
			return
		}
	}
}

func linCall(ctx context.Context, s contract.StateStore, in linInput) (*contract.Run, error) {
	tenant, id := "lin", fmt.Sprintf("run%d", in.run)
	switch in.kind {
	case linGet:
		return s.GetRun(ctx, tenant, id)
	case linPut:
		return s.PutRun(ctx, contract.Run{Tenant: tenant, ID: id, Version: in.version, Data: []byte(in.data), Status: in.status})
	case linPatch:
		return s.PatchRun(ctx, tenant, id, contract.Patch{Counters: contract.Counters{Iterations: 1}, Status: in.status})
	default:
		return nil, s.DeleteRun(ctx, tenant, id)
	}
}

// linOutcome sorts a call's result. An error that says the input was
// wrong is a bug of the test or the store, reported as fatal.
func linOutcome(r *contract.Run, err error) (linOutput, error) {
	var conflict *contract.StateConflictError
	switch {
	case err == nil && r == nil:
		return linOutput{}, nil
	case err == nil:
		return linOutput{run: linRun{exists: true, version: r.Version, data: string(r.Data), status: r.Status, count: r.Counters.Iterations}}, nil
	case errors.Is(err, contract.ErrNotFound):
		return linOutput{notFound: true}, nil
	case errors.As(err, &conflict):
		return linOutput{conflict: true, actual: conflict.Actual}, nil
	case errors.Is(err, contract.ErrInvalid):
		return linOutput{}, err
	}
	return linOutput{unknown: true}, nil
}

// linCheck checks the history. A history that is not linearizable is
// checked again with the outcome of the first call no order can explain
// taken as unknown, until the rest is linearizable: the number of
// outcomes disregarded is the violation count.
func linCheck(h []porcupine.Operation) linReport {
	began := time.Now()
	rep := linReport{ops: len(h)}
	for _, op := range h {
		if op.Output.(linOutput).unknown {
			rep.unknown++
		}
	}
	parts := linModel.Partition(h)
	single := linModel
	single.Partition = nil
	for _, part := range parts {
		for range 200 {
			res := porcupine.CheckOperationsTimeout(single, part, 20*time.Second)
			if res == porcupine.Ok {
				break
			}
			if res == porcupine.Unknown {
				rep.undecided = true
				break
			}
			if time.Since(began) > 40*time.Second {
				rep.uncounted = true // more violations than counted
				break
			}
			_, info := porcupine.CheckOperationsVerbose(single, part, 20*time.Second)
			i := linCulprit(part, info)
			rep.violations++
			if len(rep.examples) < 8 {
				rep.examples = append(rep.examples, linDescribe(part, i))
			}
			part = append([]porcupine.Operation(nil), part...)
			out := part[i].Output.(linOutput)
			out.unknown = true
			part[i].Output = out
		}
	}
	rep.checked = time.Since(began)
	return rep
}

// linCulprit is the call the longest partial linearization could not
// take: of the calls it left out, the one that returned first.
func linCulprit(part []porcupine.Operation, info porcupine.LinearizationInfo) int {
	in := make([]bool, len(part))
	longest := 0
	for _, l := range info.PartialLinearizations()[0] {
		if len(l) > longest {
			longest = len(l)
			clear(in)
			for _, id := range l {
				in[id] = true
			}
		}
	}
	culprit := -1
	for i := range part {
		if !in[i] && (culprit < 0 || part[i].Return < part[culprit].Return) {
			culprit = i
		}
	}
	return culprit
}

// linDescribe says what a disregarded call did and what ran beside it.
func linDescribe(part []porcupine.Operation, i int) string {
	op := part[i]
	var beside []string
	idx := make([]int, len(part))
	for j := range idx {
		idx[j] = j
	}
	sort.Slice(idx, func(a, b int) bool { return part[idx[a]].Call < part[idx[b]].Call })
	for _, j := range idx {
		o := part[j]
		if j != i && o.Call <= op.Return && o.Return >= op.Call-int64(50*time.Millisecond) && len(beside) < 6 {
			beside = append(beside, fmt.Sprintf("c%d %s", o.ClientId, linModel.DescribeOperation(o.Input, o.Output)))
		}
	}
	return fmt.Sprintf("c%d %s [%v..%v]; around it: %s", op.ClientId, linModel.DescribeOperation(op.Input, op.Output),
		time.Duration(op.Call), linReturn(op.Return), strings.Join(beside, "; "))
}

func linReturn(r int64) string {
	if r == math.MaxInt64 {
		return "open"
	}
	return time.Duration(r).String()
}
