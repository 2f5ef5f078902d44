package contracttest

import (
	"errors"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/policy"
)

// queueRetryCases pin that Fail follows the queue's policy: attempt
// counts, backoff times with the jitter source pinned, exhaustion and
// permanent errors to the dead letter, and Metadata through it all.
func queueRetryCases() []subtest[QueueFactory] {
	return []subtest[QueueFactory]{
		{"BackoffSchedule", testBackoffSchedule},
		{"JitterFromPolicy", testJitterFromPolicy},
		{"PermanentDeadAtOnce", testPermanentDead},
		{"MetadataSurvivesEverything", testMetadataSurvives},
	}
}

func testBackoffSchedule(t *testing.T, f QueueFactory) {
	q, clock := newQueue(t, f, policy.Policy{MaxAttempts: 3, BaseDelay: time.Second, MaxDelay: time.Minute, Jitter: policy.Fixed(1)})
	in := contract.Item{Tenant: "acme", ID: "x", Payload: []byte("p")}
	enqueue(t, q, in)
	for attempt, backoff := range []time.Duration{time.Second, 2 * time.Second} {
		l := claimOne(t, q, "w")
		if l.Item.Attempts != attempt {
			t.Errorf("claim %d: Attempts = %d, want %d", attempt+1, l.Item.Attempts, attempt)
		}
		if attempt > 0 && l.Item.LastError != "boom 1" {
			t.Errorf("claim %d: LastError = %q, want %q", attempt+1, l.Item.LastError, "boom 1")
		}
		failAt := clock.Now()
		cause := errors.New("boom " + string(rune('1'+attempt)))
		d, err := q.Fail(t.Context(), l, cause)
		mustNoErr(t, err, "Fail %d", attempt+1)
		if !d.Retry || d.Reason != policy.ReasonRetry {
			t.Errorf("Fail %d: decision %+v, want a retry", attempt+1, d)
		}
		sameTime(t, "decision At", d.At, failAt.Add(backoff))
		wantItemState(t, q, l.Key(), string(contract.StateQueued), "after a retried Fail")
		clock.Set(failAt.Add(backoff - time.Millisecond))
		wantEmpty(t, q, "", "1ms before the backoff ends")
		clock.Set(failAt.Add(backoff))
	}
	l := claimOne(t, q, "w")
	if l.Item.Attempts != 2 || l.Item.LastError != "boom 2" {
		t.Errorf("third claim: Attempts=%d LastError=%q, want 2 and \"boom 2\"", l.Item.Attempts, l.Item.LastError)
	}
	deadAt := clock.Advance(time.Second)
	d, err := q.Fail(t.Context(), l, errors.New("boom 3"))
	mustNoErr(t, err, "third Fail")
	if d.Retry || d.Reason != policy.ReasonMaxAttempts {
		t.Errorf("third Fail with MaxAttempts 3: decision %+v, want dead with reason %q", d, policy.ReasonMaxAttempts)
	}
	clock.Advance(time.Hour)
	wantEmpty(t, q, "", "after the last attempt failed")
	dead := deadLetters(t, q, contract.DeadLetterFilter{})
	if len(dead) != 1 {
		t.Fatalf("dead letters after exhaustion: %d, want 1", len(dead))
	}
	dl := dead[0]
	if dl.ID != "x" || dl.State != contract.StateDead || dl.Attempts != 3 || dl.LastError != "boom 3" || string(dl.Payload) != "p" {
		t.Errorf("dead letter: id=%s state=%q attempts=%d last error=%q payload=%q, want x, dead, 3, \"boom 3\", \"p\"",
			dl.ID, dl.State, dl.Attempts, dl.LastError, dl.Payload)
	}
	sameTime(t, "DeadAt", dl.DeadAt, deadAt)
	wantItemState(t, q, in.Key(), string(contract.StateDead), "after exhaustion")
}

func testJitterFromPolicy(t *testing.T, f QueueFactory) {
	q, clock := newQueue(t, f, policy.Policy{MaxAttempts: 5, BaseDelay: 10 * time.Second, MaxDelay: time.Minute, Jitter: policy.Fixed(0.5)})
	enqueue(t, q, item("acme", "x"))
	l := claimOne(t, q, "w")
	now := clock.Now()
	d, err := q.Fail(t.Context(), l, errors.New("boom"))
	mustNoErr(t, err, "Fail")
	sameTime(t, "decision At with jitter Fixed(0.5) of a 10s backoff", d.At, now.Add(5*time.Second))
	clock.Set(now.Add(5*time.Second - time.Millisecond))
	wantEmpty(t, q, "", "before the jittered backoff ends")
	clock.Set(now.Add(5 * time.Second))
	claimOne(t, q, "w")
}

func testPermanentDead(t *testing.T, f QueueFactory) {
	q, clock := newQueue(t, f, testPolicy())
	enqueue(t, q, item("acme", "x"), item("acme", "y"))
	l := claimOne(t, q, "w")
	now := clock.Now()
	d, err := q.Fail(t.Context(), l, policy.Permanent(errors.New("bad input: no such tool")))
	mustNoErr(t, err, "Fail(Permanent)")
	if d.Retry || d.Reason != policy.ReasonPermanent {
		t.Errorf("Fail(Permanent) decision %+v, want dead with reason %q", d, policy.ReasonPermanent)
	}
	dead := deadLetters(t, q, contract.DeadLetterFilter{})
	if len(dead) != 1 || dead[0].ID != l.Item.ID || dead[0].Attempts != 1 || !containsAny(dead[0].LastError, "no such tool") {
		t.Fatalf("dead letters after Fail(Permanent) = %+v, want %s with 1 attempt and the cause", dead, l.Item.ID)
	}
	sameTime(t, "DeadAt", dead[0].DeadAt, now)
	if dead[0].State != contract.StateDead {
		t.Errorf("dead letter State = %q, want dead", dead[0].State)
	}
	other := claimOne(t, q, "w")
	if other.Item.ID == l.Item.ID {
		t.Errorf("claimed the permanently failed item again")
	}
	clock.Advance(time.Hour)
	wantEmpty(t, q, "", "after Fail(Permanent), an hour later")
}

func testMetadataSurvives(t *testing.T, f QueueFactory) {
	q, clock := newQueue(t, f, policy.Policy{MaxAttempts: 3, Jitter: policy.Fixed(0)})
	md := map[string]string{
		"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"tracestate":  "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE",
		"x-custom":    "value with spaces",
		"ünïcode":     "値",
		"empty":       "",
	}
	in := contract.Item{Tenant: "acme", ID: "x", Payload: []byte("p"), Metadata: md}
	enqueue(t, q, in)
	check := func(stage string, got map[string]string) {
		t.Helper()
		sameMetadata(t, stage, got, md)
	}
	l := claimOne(t, q, "w")
	check("claim", l.Item.Metadata)
	_, err := q.Fail(t.Context(), l, errors.New("retry me"))
	mustNoErr(t, err, "Fail")
	l = claimOne(t, q, "w")
	check("claim after retry", l.Item.Metadata)
	hb, err := q.Heartbeat(t.Context(), l, lease)
	mustNoErr(t, err, "Heartbeat")
	check("heartbeat", hb.Item.Metadata)
	clock.Advance(2 * lease)
	reap(t, q, 1, "expired lease")
	l = claimOne(t, q, "w")
	check("claim after reap", l.Item.Metadata)
	_, err = q.Fail(t.Context(), l, errors.New("third and last"))
	mustNoErr(t, err, "Fail")
	dead := deadLetters(t, q, contract.DeadLetterFilter{})
	if len(dead) != 1 {
		t.Fatalf("dead letters: %d, want 1", len(dead))
	}
	check("dead letter", dead[0].Metadata)
	if info, _, ok := itemState(t, q, in.Key()); ok {
		check("Inspector.Item of the dead letter", info.Item.Metadata)
	}
	n, err := q.Requeue(t.Context(), contract.DeadLetterFilter{Tenant: "acme", ID: "x"})
	mustNoErr(t, err, "Requeue")
	if n != 1 {
		t.Fatalf("Requeue moved %d, want 1", n)
	}
	l = claimOne(t, q, "w")
	check("claim after requeue", l.Item.Metadata)
}
