package redisstore

import (
	"strconv"
	"strings"
	"testing"

	"github.com/adkit/adk/modules/contract"
)

func TestKeyLayout(t *testing.T) {
	k := newStateKeys("adk", "acme")
	if got, want := k.run("run_1"), "adk:state:{4:acme}:run:5:run_1"; got != want {
		t.Errorf("run key %q, want %q", got, want)
	}
	if got, want := k.session("s1"), "adk:state:{4:acme}:session:2:s1"; got != want {
		t.Errorf("session key %q, want %q", got, want)
	}
	if got, want := newQueueKeys("adk").queue("default"), "{adk:queue}:q:7:default:"; got != want {
		t.Errorf("queue prefix %q, want %q", got, want)
	}
	// The colliding pair of the specification.
	a, b := newStateKeys("adk", "a:b").run("x"), newStateKeys("adk", "a").run("b:x")
	if a == b {
		t.Errorf("tenant a:b id x and tenant a id b:x share key %q", a)
	}
}

// hashTag returns what Redis Cluster hashes for key: the text between the
// first '{' and the next '}', when not empty; otherwise the whole key.
func hashTag(key string) string {
	i := strings.IndexByte(key, '{')
	if i < 0 {
		return key
	}
	j := strings.IndexByte(key[i+1:], '}')
	if j <= 0 {
		return key
	}
	return key[i+1 : i+1+j]
}

// FuzzKeyEncoding: distinct (tenant, id) pairs never build the same run
// key or item ref, refs parse back, and every key of one tenant shares a
// hash tag whatever braces the names hold.
func FuzzKeyEncoding(f *testing.F) {
	f.Add("a:b", "x", "a", "b:x")
	f.Add("{x}", "1", "{x", "}1")
	f.Add("acme", "run_1", "acme", "run_1")
	f.Add("", "", "0:", "")
	f.Add("ünï", "∂", "1:", "1:")
	f.Fuzz(func(t *testing.T, t1, id1, t2, id2 string) {
		k1, k2 := newStateKeys("adk", t1), newStateKeys("adk", t2)
		same := t1 == t2 && id1 == id2
		if (k1.run(id1) == k2.run(id2)) != same {
			t.Errorf("run keys %q and %q: equal=%v for distinct=%v", k1.run(id1), k2.run(id2), k1.run(id1) == k2.run(id2), !same)
		}
		if (k1.meta(id1) == k2.meta(id2)) != same {
			t.Errorf("meta keys collide for (%q,%q) (%q,%q)", t1, id1, t2, id2)
		}
		if (k1.session(id1) == k2.session(id2)) != same {
			t.Errorf("session keys collide for (%q,%q) (%q,%q)", t1, id1, t2, id2)
		}
		if (itemRef(t1, id1) == itemRef(t2, id2)) != same {
			t.Errorf("item refs collide for (%q,%q) (%q,%q)", t1, id1, t2, id2)
		}
		gotT, gotID, ok := parseRef(itemRef(t1, id1))
		if !ok || gotT != t1 || gotID != id1 {
			t.Errorf("parseRef(itemRef(%q,%q)) = %q,%q,%v", t1, id1, gotT, gotID, ok)
		}
		tag := hashTag(k1.run(id1))
		for _, k := range []string{k1.meta(id1), k1.index(), k1.seq(), k1.session(id2), k1.run(id2)} {
			if hashTag(k) != tag {
				t.Errorf("tenant %q: key %q hashes on %q, run key on %q", t1, k, hashTag(k), tag)
			}
		}
		if (t1 != t2) && newQueueKeys("adk").queue(t1) == newQueueKeys("adk").queue(t2) {
			t.Errorf("queue prefixes collide for %q and %q", t1, t2)
		}
		if hashTag(newQueueKeys("adk").queue(t1)) != "adk:queue" {
			t.Errorf("queue %q escapes the namespace tag", t1)
		}
	})
}

func TestClaimLogRoundTrip(t *testing.T) {
	entry := lp("w:1") + lp("1893456000000000000") + itemRef("a:b", "{id}") + itemRef("", "x") + itemRef("a:b", "9:")
	turns := parseClaimLog(entry)
	want := []contract.Turn{{Tenant: "a:b", ID: "{id}"}, {Tenant: "", ID: "x"}, {Tenant: "a:b", ID: "9:"}}
	if len(turns) != len(want) {
		t.Fatalf("parseClaimLog = %+v, want %d turns", turns, len(want))
	}
	for i, turn := range turns {
		if turn.Tenant != want[i].Tenant || turn.ID != want[i].ID || turn.Worker != "w:1" || turn.At.UnixNano() != 1893456000000000000 {
			t.Errorf("turn %d = %+v, want %+v by w:1 at 1893456000000000000", i, turn, want[i])
		}
	}
	if got := parseClaimLog(lp("w") + "12"); got != nil {
		t.Errorf("a truncated entry gave %+v", got)
	}
}

func TestShardKeysSpreadOverSlotRanges(t *testing.T) {
	if got := shardQueueKeys("adk", 0, 1); got != newQueueKeys("adk") {
		t.Fatalf("one shard is %q, want the keys of a queue without shards %q", got.ns, newQueueKeys("adk").ns)
	}
	for n := 2; n <= MaxShards; n++ {
		seen := map[string]bool{}
		for i := 0; i < n; i++ {
			k := shardQueueKeys("adk", i, n)
			tag := strings.TrimSuffix(strings.TrimPrefix(k.ns, "{"), "}:")
			if s := keySlot(tag); s < i*slotCount/n || s >= (i+1)*slotCount/n {
				t.Errorf("n=%d shard %d: tag %q is in slot %d, outside its range", n, i, tag, s)
			}
			if seen[k.ns] {
				t.Errorf("n=%d: two shards share %q", n, k.ns)
			}
			seen[k.ns] = true
		}
	}
	// The slot function agrees with Redis: CLUSTER KEYSLOT foo is 12182.
	if s := keySlot("foo"); s != 12182 {
		t.Errorf("keySlot(foo) = %d, want 12182", s)
	}
}

func TestShardOfIsStableAndSpreads(t *testing.T) {
	if shardOf("anything", 1) != 0 {
		t.Fatal("one shard must hold every tenant")
	}
	counts := make([]int, 3)
	for i := range 3000 {
		s := shardOf("tenant-"+strconv.Itoa(i), 3)
		if s != shardOf("tenant-"+strconv.Itoa(i), 3) {
			t.Fatal("shardOf is not stable")
		}
		counts[s]++
	}
	for i, c := range counts {
		if c < 800 || c > 1200 {
			t.Errorf("shard %d holds %d of 3000 tenants: %v", i, c, counts)
		}
	}
}
