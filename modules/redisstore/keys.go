package redisstore

import (
	"strconv"
	"strings"
)

// lp length-prefixes one key segment. Prefixing instead of escaping means
// no choice of tenant or id can make two different (tenant, id) pairs build
// the same key: "a:b" + "x" and "a" + "b:x" encode as "3:a:b1:x" and
// "1:a3:b:x".
func lp(s string) string {
	return strconv.Itoa(len(s)) + ":" + s
}

// stateKeys builds the keys of one tenant's runs. The length-prefixed
// tenant is the cluster hash tag, so a run, its counters and its indexes
// share a slot and one script can touch them all.
type stateKeys struct {
	prefix string // "<ns>:state:{<lp tenant>}:"
}

func newStateKeys(ns, tenant string) stateKeys {
	return stateKeys{prefix: ns + ":state:{" + lp(tenant) + "}:"}
}

func (k stateKeys) run(id string) string     { return k.prefix + "run:" + lp(id) }
func (k stateKeys) meta(id string) string    { return k.prefix + "meta:" + lp(id) }
func (k stateKeys) index() string            { return k.prefix + "runs" }
func (k stateKeys) patches(id string) string { return k.prefix + "patches:" + lp(id) }
func (k stateKeys) seq() string              { return k.prefix + "seq" }
func (k stateKeys) session(s string) string  { return k.prefix + "session:" + lp(s) }

// replays and outcomes hold what each recent write did, under its nonce
// (see scripts/state_lib.lua). They are the tenant's, not the run's, so
// the record of a delete outlives the run it deleted.
func (k stateKeys) replays() string  { return k.prefix + "replays" }
func (k stateKeys) outcomes() string { return k.prefix + "outcomes" }

// queueKeys builds the keys of one namespace's queues. The whole namespace
// is one hash tag because a claim reads several tenants' ready sets in one
// script; a deployment shards by running several namespaces.
type queueKeys struct {
	ns string // "{<ns>:queue}:"
}

func newQueueKeys(ns string) queueKeys { return queueKeys{ns: "{" + ns + ":queue}:"} }

// queue is the prefix of every key of one queue.
func (k queueKeys) queue(name string) string { return k.ns + "q:" + lp(name) + ":" }
func (k queueKeys) queues() string           { return k.ns + "queues" }
func (k queueKeys) token() string            { return k.ns + "token" }

// The keys of one queue, in the order every queue script declares them
// (queue_lib.lua unpacks KEYS in this order). A script names every key it
// touches in KEYS, so that Redis Cluster routes it by all of them and, on
// a slot being migrated, refuses it whole (ASK or TRYAGAIN) unless every
// key is on the node that received it; a key a script built for itself
// would be looked up only when the script reached it, after its first
// writes.
var queueKeySuffixes = [...]string{
	"ready", "rot", "wait", "turns", "turn", "seq", "items", "lease", "leases",
	"dead", "tdead", "served", "tenants", "log", "claims", "claimlog",
	// flow control (flow.go): the queue's flag, its limits, each tenant's
	// flow state, and the live leases by tenant while the flag is on
	"flow", "limits", "fstate", "tleases",
}

// lifecycleKeySuffixes are the queue's lifecycle keys (pause and the
// counters of the controls in use, the wait deadlines and starts, the
// cancelled items, the delayed prioritised items), declared after the
// namespace's two so that the earlier positions keep their meaning.
var lifecycleKeySuffixes = [...]string{"life", "waits", "parked", "cancels", "pdelay"}

// historyKeySuffixes are the queue's history keys (history.go): its
// finished items by finish time, its ID index, the items' events and the
// queue's event log, declared after the lifecycle keys.
var historyKeySuffixes = [...]string{"fin", "ids", "evs", "elog"}

// nQueueKeys is how many keys a queue script declares: the queue's own,
// then the namespace's fencing token and queue list, then the queue's
// lifecycle keys and its history keys.
const nQueueKeys = len(queueKeySuffixes) + 2 + len(lifecycleKeySuffixes) + len(historyKeySuffixes)

// list returns the keys of queue name in script order.
func (k queueKeys) list(name string) []string {
	p := k.queue(name)
	out := make([]string, 0, nQueueKeys)
	for _, s := range queueKeySuffixes {
		out = append(out, p+s)
	}
	out = append(out, k.token(), k.queues())
	for _, s := range lifecycleKeySuffixes {
		out = append(out, p+s)
	}
	for _, s := range historyKeySuffixes {
		out = append(out, p+s)
	}
	return out
}

// completeKeys returns the keys the complete step of queue name touches
// (its records, lease values and lease expiries, then its flow flag,
// flow state and live leases by tenant, then its lifecycle hash and
// cancelled items, then its history keys), in the order complete_lib.lua
// reads them.
func (k queueKeys) completeKeys(name string) []string {
	p := k.queue(name)
	return []string{p + "items", p + "lease", p + "leases", p + "flow", p + "fstate", p + "tleases", p + "life", p + "cancels",
		p + "fin", p + "ids", p + "evs", p + "elog"}
}

// nCompleteKeys is how many keys completeKeys returns.
const nCompleteKeys = 12

// hex16 is n as 16 lower-case hex digits: the fixed-width form in which
// due times and sequence numbers sort as strings in the ready and dead
// sets.
func hex16(n int64) string {
	const digits = "0123456789abcdef"
	var b [16]byte
	for i := 15; i >= 0; i-- {
		b[i] = digits[n&15]
		n >>= 4
	}
	return string(b[:])
}

// itemRef names an item within its queue: the member of the lease and
// dead-letter sets, and the suffix of its record key.
func itemRef(tenant, id string) string { return lp(tenant) + lp(id) }

// idMember is the item's member of its queue's ID index (IDS in
// queue_lib.lua): lp(id) lp(tenant), so that an ID's items are one lex
// range.
func idMember(tenant, id string) string { return lp(id) + lp(tenant) }

// parseRef splits an itemRef back into tenant and id.
func parseRef(ref string) (tenant, id string, ok bool) {
	tenant, rest, ok := cutLP(ref)
	if !ok {
		return "", "", false
	}
	id, rest, ok = cutLP(rest)
	return tenant, id, ok && rest == ""
}

func cutLP(s string) (seg, rest string, ok bool) {
	i := strings.IndexByte(s, ':')
	if i <= 0 {
		return "", "", false
	}
	n, err := strconv.Atoi(s[:i])
	if err != nil || n < 0 || len(s)-i-1 < n {
		return "", "", false
	}
	return s[i+1 : i+1+n], s[i+1+n:], true
}

// wakeChannel is the pub/sub channel enqueues publish on.
func wakeChannel(ns, queue string) string { return ns + ":wake:" + lp(queue) }

// shardQueueKeys returns the queue keys of shard i of n. One shard is
// the layout of a queue that never set Shards ("{<ns>:queue}:"). With n
// above one, shard i is "{<ns>:queue:<i>.<k>}:" with the smallest k whose
// cluster slot falls in the i-th of n equal slot ranges: a cluster made by
// redis-cli --cluster create gives each of its masters one such range, so
// with n equal to the number of masters the shards of a queue start out
// one per master. The choice depends on the namespace and n alone, so
// every process of a deployment finds the same keys without asking a
// server; changing n is a change of layout (see Settings.Shards).
func shardQueueKeys(ns string, i, n int) queueKeys {
	if n <= 1 {
		return newQueueKeys(ns)
	}
	lo, hi := i*slotCount/n, (i+1)*slotCount/n
	base := ns + ":queue:" + strconv.Itoa(i) + "."
	for k := 0; ; k++ {
		tag := base + strconv.Itoa(k)
		if s := keySlot(tag); s >= lo && s < hi {
			return queueKeys{ns: "{" + tag + "}:"}
		}
	}
}

// slotCount is the number of Redis Cluster hash slots.
const slotCount = 16384

// keySlot is the cluster slot of a hash tag's content: CRC16-CCITT
// (XMODEM) modulo 16384, as Redis Cluster computes it.
func keySlot(tag string) int {
	var crc uint16
	for i := 0; i < len(tag); i++ {
		crc ^= uint16(tag[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc % slotCount)
}

// shardOf is the shard of n that holds tenant's items: FNV-1a of the
// tenant's name modulo n, stable across processes and releases.
func shardOf(tenant string, n int) int {
	if n <= 1 {
		return 0
	}
	h := uint32(2166136261)
	for i := 0; i < len(tenant); i++ {
		h ^= uint32(tenant[i])
		h *= 16777619
	}
	return int(h % uint32(n))
}
