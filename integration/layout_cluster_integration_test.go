//go:build integration

package integration

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/redisstore"
	"github.com/adkit/adk/modules/redisstore/redistest"
)

// TestClusterSplitSlotRefusesLayoutMigration: while the namespace's slot
// is half-moved (every key on the target but the item records and one
// tenant's old sets, so the migration's reads all answer), the layout
// migration's script is refused whole (TRYAGAIN) and changes nothing on
// either node; once the slot has moved the migration completes, the move
// having met no key on the target it had not put there.
func TestClusterSplitSlotRefusesLayoutMigration(t *testing.T) {
	ctx := context.Background()
	cl := redistest.StartCluster(t, 3)
	client := cl.Client(t, &redis.ClusterOptions{MaxRedirects: 2})
	refused := &refusedCommands{}
	client.AddHook(refused)
	ns := "adklayout"
	prefix := queuePrefix(ns, contract.DefaultQueue)

	// The layout before declared keys, as its scripts left it: tenant
	// acme with two queued items and one dead letter, in acme's own sets.
	lp := func(s string) string { return strconv.Itoa(len(s)) + ":" + s }
	ref := func(id string) string { return lp("acme") + lp(id) }
	record := func(state, ds, id, member string) string {
		var b strings.Builder
		for _, f := range []string{state, "0", "", "", "1", "", ds, "", "acme", id, "", "", member} {
			b.WriteString(lp(f))
		}
		return b.String()
	}
	due := float64(time.Now().UnixNano() / 1000)
	m1, m2 := fmt.Sprintf("%016x", 1)+ref("i1"), fmt.Sprintf("%016x", 2)+ref("i2")
	oldReady, oldDead := prefix+"ready:"+lp("acme"), prefix+"dead:"+lp("acme")
	pipe := client.TxPipeline()
	pipe.HSet(ctx, prefix+"items", ref("i1"), record("q", "", "i1", m1), ref("i2"), record("q", "", "i2", m2),
		ref("d1"), record("d", "3", "d1", ""))
	pipe.ZAdd(ctx, oldReady, redis.Z{Score: due, Member: m1}, redis.Z{Score: due, Member: m2})
	pipe.ZAdd(ctx, oldDead, redis.Z{Score: 3, Member: ref("d1")})
	pipe.ZAdd(ctx, prefix+"dead", redis.Z{Score: 3, Member: ref("d1")})
	pipe.ZAdd(ctx, prefix+"rot", redis.Z{Score: 1, Member: "acme"})
	pipe.HSet(ctx, prefix+"turns", "acme", 1)
	pipe.Set(ctx, prefix+"turn", 1, 0)
	pipe.Set(ctx, prefix+"seq", 3, 0)
	pipe.SAdd(ctx, prefix+"tenants", "acme")
	pipe.SAdd(ctx, "{"+ns+":queue}:queues", contract.DefaultQueue)
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}

	budget := redisstore.RetryBudget{Attempts: 3, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond}
	q, err := redisstore.NewQueue(client, nil, redisstore.Settings{Namespace: ns, RetryBudget: budget})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	slot := redistest.Slot(prefix)
	mv, keys := beginSlotMove(t, cl, slot)
	var rest []string
	for _, k := range keys {
		if k != oldReady && k != oldDead && k != prefix+"items" {
			rest = append(rest, k)
		}
	}
	if err := mv.Migrate(ctx, rest...); err != nil {
		t.Fatal(err)
	}
	before := dumpSlot(t, cl, slot)
	_, err = q.MigrateLayout(ctx)
	var qu *contract.QueueUnavailableError
	if !errors.As(err, &qu) || !strings.Contains(err.Error(), "TRYAGAIN") {
		t.Errorf("migration on a split slot: %v; want a QueueUnavailableError after TRYAGAIN", err)
	}
	if got := refused.names(); !strings.Contains(got, "fcall") || strings.Contains(got, "exists") || strings.Contains(got, "sscan") {
		t.Errorf("commands refused with TRYAGAIN: %s; want the migration script only", got)
	}
	if after := dumpSlot(t, cl, slot); !maps.Equal(before, after) {
		t.Errorf("the refused migration changed the split slot:\nbefore %v\nafter  %v", keysOf(before), keysOf(after))
	}

	if err := mv.Migrate(ctx, oldReady, oldDead, prefix+"items"); err != nil {
		t.Fatal(err)
	}
	if err := mv.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	rep, err := q.MigrateLayout(ctx)
	if err != nil || len(rep.Queues) != 1 || rep.Queues[0].Ready != 2 || rep.Queues[0].Dead != 1 {
		t.Fatalf("migration after the move: %+v, %v; want 2 items and 1 letter moved", rep.Queues, err)
	}
	if _, err := redisstore.Preflight(ctx, client, redisstore.Settings{Namespace: ns, Volatile: true}); err != nil {
		t.Errorf("preflight after the migration: %v", err)
	}
	ls, err := q.Claim(ctx, contract.ClaimRequest{LeaseFor: time.Minute, Max: 10})
	if err != nil || len(ls) != 2 || ls[0].Item.ID != "i1" || ls[1].Item.ID != "i2" {
		t.Errorf("claim after the migration: %v, %v; want i1, i2", ls, err)
	}
	page, err := q.DeadLetters(ctx, contract.DeadLetterQuery{DeadLetterFilter: contract.DeadLetterFilter{Tenant: "acme"}})
	if err != nil || len(page.Items) != 1 || page.Items[0].ID != "d1" {
		t.Errorf("acme's dead letters after the migration: %v, %v; want d1", page.Items, err)
	}
}

// refusedCommands notes the commands a cluster answered TRYAGAIN.
type refusedCommands struct {
	mu  sync.Mutex
	got map[string]bool
}

func (h *refusedCommands) names() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return strings.Join(slices.Sorted(maps.Keys(h.got)), " ")
}

func (h *refusedCommands) note(cmd redis.Cmder) {
	if err := cmd.Err(); err != nil && strings.HasPrefix(err.Error(), "TRYAGAIN") {
		h.mu.Lock()
		if h.got == nil {
			h.got = map[string]bool{}
		}
		h.got[cmd.Name()] = true
		h.mu.Unlock()
	}
}

func (h *refusedCommands) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *refusedCommands) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.note(cmd)
		return err
	}
}

func (h *refusedCommands) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, c := range cmds {
			h.note(c)
		}
		return err
	}
}

// beginSlotMove starts moving slot from its owner to the next node (the
// slot marked importing there and migrating on the owner) and returns the
// move and the slot's keys, none moved yet.
func beginSlotMove(t *testing.T, cl *redistest.Cluster, slot int) (*redistest.SlotMove, []string) {
	t.Helper()
	ctx := context.Background()
	owner, err := cl.Owner(ctx, slot)
	if err != nil {
		t.Fatal(err)
	}
	mv, err := cl.NewSlotMove(ctx, slot, (owner+1)%3)
	if err != nil {
		t.Fatal(err)
	}
	if err := mv.Begin(ctx); err != nil {
		t.Fatal(err)
	}
	keys, err := mv.Keys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return mv, keys
}
