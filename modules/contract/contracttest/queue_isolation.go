package contracttest

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/policy"
)

// queueIsolationCases pin that tenants and queues never see each other's
// items, whatever characters their names hold.
func queueIsolationCases() []subtest[QueueFactory] {
	return []subtest[QueueFactory]{
		{"HostileNamesNeverCollide", testQueueHostileNames},
		{"SameIDInTwoTenants", testSameIDTwoTenants},
		{"QueuesAreSeparate", testQueuesSeparate},
		{"FactoryQueuesShareNothing", testQueueFactoryFresh},
	}
}

func testQueueHostileNames(t *testing.T, f QueueFactory) {
	q, _ := newQueue(t, f, testPolicy())
	want := map[contract.ItemKey][]byte{}
	var all []contract.Item
	for _, tenant := range hostileTenants {
		for _, id := range hostileIDs {
			it := contract.Item{Tenant: tenant, ID: id, Payload: fmt.Appendf(nil, "%q/%q", tenant, id)}
			all = append(all, it)
			want[it.Key()] = it.Payload
		}
	}
	enqueue(t, q, all...)
	if ins, ok := contract.AsInspector(q); ok {
		st := statsByTenant(t, ins, contract.DefaultQueue)
		for _, tenant := range hostileTenants {
			if got := st[tenant].Ready; got != int64(len(hostileIDs)) {
				t.Errorf("Inspector.Tenants counts %d ready items for tenant %q, want %d", got, tenant, len(hostileIDs))
			}
		}
		if len(st) != len(hostileTenants) {
			t.Errorf("Inspector.Tenants lists %d tenants, want %d", len(st), len(hostileTenants))
		}
		info, err := ins.Item(t.Context(), contract.ItemKey{Tenant: "a", Queue: contract.DefaultQueue, ID: "b:x"})
		mustNoErr(t, err, "Inspector.Item(a/b:x)")
		if info.Item.Tenant != "a" || info.Item.ID != "b:x" || !bytes.Equal(info.Item.Payload, want[contract.ItemKey{Tenant: "a", Queue: contract.DefaultQueue, ID: "b:x"}]) {
			t.Errorf("Inspector.Item(a/b:x) = %q/%q payload %s", info.Item.Tenant, info.Item.ID, info.Item.Payload)
		}
	}
	ls := drain(t, q, "", "w", 50)
	if len(ls) != len(all) {
		t.Errorf("enqueued %d items under hostile names, claimed %d (names collided?)", len(all), len(ls))
	}
	for _, l := range ls {
		k := normKey(l.Key())
		p, ok := want[k]
		if !ok {
			t.Errorf("claimed %q/%q, which was not enqueued or was claimed twice", k.Tenant, k.ID)
			continue
		}
		if !bytes.Equal(l.Item.Payload, p) {
			t.Errorf("claimed %q/%q with payload %s, want %s", k.Tenant, k.ID, l.Item.Payload, p)
		}
		delete(want, k)
	}
	// Settle half by tenant "a": nothing of "a:b" may go with it.
	for _, l := range ls {
		if l.Item.Tenant == "a" {
			mustNoErr(t, q.Complete(t.Context(), l), "Complete of %q/%q", l.Item.Tenant, l.Item.ID)
		}
	}
	for _, l := range ls {
		if l.Item.Tenant == "a:b" {
			wantItemState(t, q, l.Key(), string(contract.StateLeased), "an a:b item after completing tenant a's")
		}
	}
	// Dead letters of wildcard-looking tenants: a filter is a name, never
	// a pattern.
	for _, l := range ls {
		if l.Item.Tenant == "a%" || l.Item.Tenant == "a*" {
			_, err := q.Fail(t.Context(), l, policy.Permanent(errors.New("poison")))
			mustNoErr(t, err, "Fail of %q/%q", l.Item.Tenant, l.Item.ID)
		}
	}
	for tenant, want := range map[string]int{"a%": len(hostileIDs), "a*": len(hostileIDs), "a": 0, "a_": 0, "a?": 0, "%": 0, "*": 0} {
		got := deadLetters(t, q, contract.DeadLetterFilter{Tenant: tenant})
		if len(got) != want {
			t.Errorf("DeadLetters(tenant %q) lists %d items, want %d", tenant, len(got), want)
		}
		for _, it := range got {
			if it.Tenant != tenant {
				t.Errorf("DeadLetters(tenant %q) lists an item of tenant %q", tenant, it.Tenant)
			}
		}
	}
	n, err := q.Requeue(t.Context(), contract.DeadLetterFilter{Tenant: "a*"})
	mustNoErr(t, err, "Requeue(tenant a*)")
	if n != len(hostileIDs) {
		t.Errorf("Requeue(tenant a*) moved %d, want %d", n, len(hostileIDs))
	}
	if got := deadLetters(t, q, contract.DeadLetterFilter{Tenant: "a%"}); len(got) != len(hostileIDs) {
		t.Errorf("Requeue(tenant a*) touched tenant a%%: %d dead letters left, want %d", len(got), len(hostileIDs))
	}
}

func testSameIDTwoTenants(t *testing.T, f QueueFactory) {
	q, clock := newQueue(t, f, testPolicy())
	enqueue(t, q, contract.Item{Tenant: "a:b", ID: "x", Payload: []byte("a:b/x")}, contract.Item{Tenant: "a", ID: "b:x", Payload: []byte("a/b:x")})
	ls := drain(t, q, "", "w", 10)
	if len(ls) != 2 {
		t.Fatalf("a:b/x and a/b:x claimed as %v, want two items", leaseIDs(ls))
	}
	byTenant := map[string]contract.Lease{}
	for _, l := range ls {
		byTenant[l.Item.Tenant] = l
		if string(l.Item.Payload) != l.Item.Tenant+"/"+l.Item.ID {
			t.Errorf("lease of %s/%s carries payload %q", l.Item.Tenant, l.Item.ID, l.Item.Payload)
		}
	}
	mustNoErr(t, q.Complete(t.Context(), byTenant["a"]), "Complete of a/b:x")
	enqueue(t, q, contract.Item{Tenant: "a", ID: "b:x", Payload: []byte("again")})
	l := claimOne(t, q, "w")
	if l.Item.Tenant != "a" || string(l.Item.Payload) != "again" {
		t.Errorf("claimed %s/%s (%q), want the re-enqueued a/b:x", l.Item.Tenant, l.Item.ID, l.Item.Payload)
	}
	clock.Advance(10 * time.Second)
	_, err := q.Heartbeat(t.Context(), byTenant["a:b"], lease)
	mustNoErr(t, err, "Heartbeat of a:b/x after a/b:x was completed and claimed again")
}

func testQueuesSeparate(t *testing.T, f QueueFactory) {
	q, clock := newQueue(t, f, testPolicy())
	mk := func(queue, id string) contract.Item {
		it := item("acme", id)
		it.Queue = queue
		return it
	}
	enqueue(t, q, mk("", "d1"), mk("q:2", "x"), mk("q", "y"), mk("q:2", "d1"))
	claimQueue := func(queue string) []contract.Lease {
		return drain(t, q, queue, "w", 10)
	}
	for queue, want := range map[string][]string{"q:2": {"x", "d1"}, "q": {"y"}, "": {"d1"}} {
		ls := claimQueue(queue)
		if len(ls) != len(want) {
			t.Errorf("queue %q served %v, want %d items", queue, leaseIDs(ls), len(want))
		}
		for _, l := range ls {
			if got := contract.QueueName(l.Item.Queue); got != contract.QueueName(queue) {
				t.Errorf("claim of queue %q returned an item of queue %q", queue, got)
			}
		}
	}
	clock.Advance(2 * lease)
	n, err := q.Reap(t.Context(), "q:2")
	mustNoErr(t, err, "Reap(q:2)")
	if n != 2 {
		t.Errorf("Reap(q:2) reaped %d, want its 2 expired leases only", n)
	}
	wantItemState(t, q, contract.ItemKey{Tenant: "acme", Queue: "q", ID: "y"}, string(contract.StateLeased), "q's lease after Reap(q:2)")
	n, err = q.Reap(t.Context(), contract.DefaultQueue)
	mustNoErr(t, err, "Reap(default)")
	if n != 1 {
		t.Errorf("Reap(default) reaped %d, want 1", n)
	}
}

func testQueueFactoryFresh(t *testing.T, f QueueFactory) {
	q1, _ := newQueue(t, f, testPolicy())
	enqueue(t, q1, item("acme", "x"))
	q2, _ := newQueue(t, f, testPolicy())
	wantEmpty(t, q2, "", "a second queue from the factory (each call must share nothing)")
	claimOne(t, q1, "w")
}
