//go:build integration

package redisstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// earlierRelease writes a namespace as the release before declared keys
// did, by running that release's own queue scripts (testdata/layout1,
// as they were in the commit before 186651e) with its arguments: one
// ready set and one dead set per tenant, no placeholders.
type earlierRelease struct {
	t        testing.TB
	c        redis.UniversalClient
	ns       string
	enqueue  *redis.Script
	claim    *redis.Script
	settle   *redis.Script
	complete *redis.Script
}

func newEarlierRelease(t testing.TB, c redis.UniversalClient, ns string) *earlierRelease {
	t.Helper()
	load := func(files ...string) *redis.Script {
		var src []byte
		for _, f := range files {
			b, err := os.ReadFile(filepath.Join("testdata", "layout1", f+".lua"))
			if err != nil {
				t.Fatal(err)
			}
			src = append(append(src, b...), '\n')
		}
		return redis.NewScript(string(src))
	}
	return &earlierRelease{t: t, c: c, ns: ns,
		enqueue:  load("queue_lib", "enqueue"),
		claim:    load("queue_lib", "claim_lib", "claim"),
		settle:   load("queue_lib", "settle"),
		complete: load("complete_lib", "complete"),
	}
}

func lp(s string) string { return strconv.Itoa(len(s)) + ":" + s }

func (o *earlierRelease) nsPrefix() string           { return "{" + o.ns + ":queue}:" }
func (o *earlierRelease) prefix(queue string) string { return o.nsPrefix() + "q:" + lp(queue) + ":" }

func (o *earlierRelease) run(sc *redis.Script, key string, args ...any) any {
	o.t.Helper()
	v, err := sc.Run(context.Background(), o.c, []string{key}, args...).Result()
	if err != nil && err != redis.Nil {
		o.t.Fatalf("earlier release: %v", err)
	}
	return v
}

func usOf(t time.Time) string { return strconv.FormatInt(t.UnixNano()/1000, 10) }
func nsOf(t time.Time) string { return strconv.FormatInt(t.UnixNano(), 10) }

// oldItem is one item to enqueue: due at now when at is zero, its
// payload "payload of "+id unless payload is set.
type oldItem struct {
	tenant, id string
	at         time.Time
	payload    string
}

// Enqueue adds items to queue at now, as that release's Enqueue did: the
// record encoded up to its ready member, which the script appends.
func (o *earlierRelease) Enqueue(queue string, now time.Time, items ...oldItem) {
	o.t.Helper()
	p := o.prefix(queue)
	args := []any{p, o.nsPrefix(), o.ns + ":wake:" + lp(queue), usOf(now), nsOf(now), queue}
	for _, it := range items {
		nb, due := "", usOf(now)
		if it.at.After(now) {
			nb, due = nsOf(it.at), usOf(it.at)
		}
		payload := it.payload
		if payload == "" {
			payload = "payload of " + it.id
		}
		var rec strings.Builder
		// s a e nb ea da ds fn t i md p (the ready member m comes last).
		for _, f := range []string{"q", "0", "", nb, nsOf(now), "", "", "", it.tenant, it.id, "", payload} {
			rec.WriteString(lp(f))
		}
		args = append(args, it.tenant, lp(it.tenant)+lp(it.id), rec.String(), due)
	}
	if n, _ := o.run(o.enqueue, p, args...).(int64); n != int64(len(items)) {
		o.t.Fatalf("earlier release enqueued %d of %d", n, len(items))
	}
}

// oldLease is an item the earlier release's claim leased.
type oldLease struct {
	tenant, id string
	token      int64
}

// Claim leases up to max items of queue at now for leaseFor.
func (o *earlierRelease) Claim(queue, worker string, now time.Time, leaseFor time.Duration, max int) []oldLease {
	o.t.Helper()
	p := o.prefix(queue)
	exp := now.Add(leaseFor)
	rows, _ := o.run(o.claim, p, p, o.nsPrefix(), usOf(now), nsOf(now), usOf(exp), nsOf(exp), worker, max, 1000, nonceHex()).([]any)
	if len(rows) == 0 {
		return nil
	}
	tok, _ := rows[0].(int64)
	var out []oldLease
	for _, r := range rows[1:] {
		fields := splitLP(o.t, r.(string))
		out = append(out, oldLease{tenant: fields[8], id: fields[9], token: tok})
	}
	return out
}

// Bury fails the lease with no retry: the item becomes a dead letter.
func (o *earlierRelease) Bury(queue string, now time.Time, l oldLease, errText string) {
	o.t.Helper()
	p := o.prefix(queue)
	res, _ := o.run(o.settle, p, p, o.nsPrefix(), usOf(now), nsOf(now), o.ns+":wake:"+lp(queue),
		lp(l.tenant)+lp(l.id), l.token, "+inf", "0", "0", "", "", errText, nonceHex()).([]any)
	if len(res) != 1 || res[0].(int64) != 1 {
		o.t.Fatalf("earlier release: bury %s/%s: %v", l.tenant, l.id, res)
	}
}

// Complete completes the lease.
func (o *earlierRelease) Complete(queue string, l oldLease) {
	o.t.Helper()
	lost, _ := o.run(o.complete, o.nsPrefix()+"queues", o.nsPrefix(), o.prefix(queue), 1, lp(l.tenant)+lp(l.id), l.token).([]any)
	if len(lost) != 0 {
		o.t.Fatalf("earlier release: complete %s/%s lost", l.tenant, l.id)
	}
}

func splitLP(t testing.TB, s string) []string {
	t.Helper()
	var out []string
	for s != "" {
		i := strings.IndexByte(s, ':')
		n, err := strconv.Atoi(s[:max(i, 0)])
		if i < 0 || err != nil || len(s) < i+1+n {
			t.Fatalf("malformed record %q", s)
		}
		out = append(out, s[i+1:i+1+n])
		s = s[i+1+n:]
	}
	return out
}

func nonceHex() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
