package redisstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/redis/go-redis/v9"
)

// offlineClient fails the test if anything tries to reach a server: the
// calls under test must refuse their input before sending.
func offlineClient(t *testing.T) *redis.Client {
	c := redis.NewClient(&redis.Options{
		Addr:       "offline.invalid:6379",
		MaxRetries: -1,
		Dialer: func(context.Context, string, string) (net.Conn, error) {
			t.Error("a command was sent; input should have been refused first")
			return nil, errors.New("unit tests have no network")
		},
	})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestRefusedBeforeSending(t *testing.T) {
	ctx := context.Background()
	c := offlineClient(t)
	st, err := NewState(c, nil, Settings{MaxValueBytes: 16})
	if err != nil {
		t.Fatal(err)
	}
	q, err := NewQueue(c, nil, Settings{MaxValueBytes: 16})
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.PutRun(ctx, contract.Run{Tenant: "a", ID: "r", Data: []byte(`{"k":"0123456789abcdef"}`)})
	var spe *contract.StatePersistenceError
	if !errors.As(err, &spe) || spe.Reason != contract.ReasonTooLarge || contract.Retryable(err) {
		t.Errorf("oversized run: %v", err)
	}
	err = q.Enqueue(ctx, contract.Item{Tenant: "a", ID: "i", Payload: make([]byte, 17)})
	if !errors.As(err, &spe) || spe.Reason != contract.ReasonTooLarge || !strings.Contains(err.Error(), "claim check") {
		t.Errorf("oversized item: %v", err)
	}
	if _, err := st.PutRun(ctx, contract.Run{Tenant: "a", ID: "r", Data: []byte("\"\xff\"")}); !errors.Is(err, contract.ErrInvalid) {
		t.Errorf("invalid UTF-8 data: %v", err)
	}
	for name, err := range map[string]error{
		"empty tenant":  q.Enqueue(ctx, contract.Item{ID: "i"}),
		"NUL id":        q.Enqueue(ctx, contract.Item{Tenant: "a", ID: "i\x00"}),
		"claim max 0":   func() error { _, err := q.Claim(ctx, contract.ClaimRequest{LeaseFor: 1}); return err }(),
		"get no tenant": func() error { _, err := st.GetRun(ctx, "", "r"); return err }(),
		"bad cursor":    func() error { _, err := st.ListRuns(ctx, "a", contract.PageRequest{Cursor: "!"}); return err }(),
		"bad lease cur": func() error { _, err := q.Leases(ctx, "", contract.PageRequest{Cursor: "x"}); return err }(),
		"rotation n":    func() error { _, err := q.Rotation(ctx, "", 1001); return err }(),
		"cc bad lease": func() error {
			_, err := q.CompleteAndClaim(ctx, []contract.Lease{{}}, contract.ClaimRequest{LeaseFor: 1, Max: 1})
			return err
		}(),
		"cc bad claim": func() error { _, err := q.CompleteAndClaim(ctx, nil, contract.ClaimRequest{Max: 1}); return err }(),
		"cc bad queue": func() error {
			_, err := q.CompleteAndClaim(ctx, nil, contract.ClaimRequest{Queue: "a\x00"})
			return err
		}(),
	} {
		if !errors.Is(err, contract.ErrInvalid) {
			t.Errorf("%s: got %v, want a ValidationError", name, err)
		}
	}
}

func TestSettings(t *testing.T) {
	s, err := Settings{}.normalized()
	if err != nil || s.Namespace != "adk" || s.MaxValueBytes != contract.DefaultMaxValueBytes || s.RecentTurns != DefaultRecentTurns ||
		s.RetryBudget.Attempts != 0 || s.RetryBudget.MaxElapsed != DefaultRetryMaxElapsed || s.WaitReplicas != 0 || s.WaitTimeout != DefaultWaitTimeout {
		t.Errorf("defaults: %+v, %v", s, err)
	}
	for _, bad := range []Settings{{Namespace: "a{b}"}, {Namespace: "a b"}, {Namespace: strings.Repeat("a", 65)}, {MaxValueBytes: -1}, {RecentTurns: -1}, {WaitReplicas: -1}, {WaitTimeout: -time.Second}} {
		if _, err := bad.normalized(); !errors.Is(err, contract.ErrInvalid) {
			t.Errorf("%+v accepted", bad)
		}
	}
	s = Settings{DSN: "redis://:hunter2@h:6379"}
	if strings.Contains(fmt.Sprintf("%v %+v %#v", s, s, s), "hunter2") {
		t.Error("the DSN's password is printed")
	}
}

func TestClassify(t *testing.T) {
	cases := []struct {
		err  error
		want errKind
	}{
		{redis.ErrPoolTimeout, kindPool},
		{fmt.Errorf("wrapped: %w", redis.ErrPoolTimeout), kindPool},
		{io.EOF, kindTransient},
		{&net.OpError{Op: "dial", Err: errors.New("connection refused")}, kindTransient},
		{context.Canceled, kindFatal},
		{context.DeadlineExceeded, kindFatal},
		{&contract.PreflightError{Setting: "maxmemory-policy"}, kindFatal},
		{&contract.ValidationError{Field: "x"}, kindFatal},
		{redis.ErrClosed, kindFatal},
		{proto("LOADING Redis is loading the dataset in memory"), kindTransient},
		{proto("READONLY You can't write against a read only replica."), kindTransient},
		{proto("CLUSTERDOWN The cluster is down"), kindTransient},
		// A slot on the move: the redirects and refusals a reshard makes.
		{proto("TRYAGAIN Multiple keys request during rehashing of slot"), kindTransient},
		{proto("ASK 15891 127.0.0.1:17001"), kindTransient},
		{proto("MOVED 15891 127.0.0.1:17001"), kindTransient},
		{proto("CROSSSLOT Keys in request don't hash to the same slot"), kindTransient},
		{proto("ERR Script attempted to access a non local key in a cluster node script: 00092e65c9bd9f0e53ea9bdeeb68ab90f5d0cf83, on @user_script:1."), kindTransient},
		{proto("ERR Script attempted to execute a command while the cluster is down script: 0009, on @user_script:1."), kindTransient},
		{proto("NOREPLICAS Not enough good replicas to write."), kindTransient},
		{proto("ERR user_script:1: oops"), kindFatal},
		{proto("OOM command not allowed when used memory > 'maxmemory'."), kindFull},
	}
	for _, c := range cases {
		if got := classify(c.err); got != c.want {
			t.Errorf("classify(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}

type proto string

func (p proto) Error() string { return string(p) }
func (p proto) RedisError()   {}

func TestRetrierGivesUp(t *testing.T) {
	calls := 0
	r := retrier{budget: RetryBudget{Attempts: 3, BaseDelay: 1, MaxDelay: 2}, unavailable: queueUnavailable}
	err := r.do(context.Background(), func(context.Context) error { calls++; return io.EOF })
	var qe *contract.QueueUnavailableError
	if calls != 3 || !errors.As(err, &qe) || !errors.Is(err, io.EOF) {
		t.Errorf("%d calls, %v", calls, err)
	}
	// With no attempt limit the time limit ends the wait.
	calls = 0
	r.budget = RetryBudget{BaseDelay: time.Millisecond, MaxDelay: 2 * time.Millisecond, MaxElapsed: 20 * time.Millisecond}
	err = r.do(context.Background(), func(context.Context) error { calls++; return io.EOF })
	if calls < 2 || !errors.As(err, &qe) {
		t.Errorf("MaxElapsed: %d calls, %v; want retries, then a QueueUnavailableError", calls, err)
	}
	// A write too few replicas acknowledged is reported at once: the
	// script ran, another run would not add replicas.
	calls = 0
	err = r.do(context.Background(), func(context.Context) error { calls++; return &ReplicaWaitError{Want: 1} })
	var rw *ReplicaWaitError
	if calls != 1 || !errors.As(err, &qe) || !errors.As(err, &rw) {
		t.Errorf("replica wait: %d calls, %v", calls, err)
	}
	calls = 0
	err = r.do(context.Background(), func(context.Context) error { calls++; return redis.ErrPoolTimeout })
	var pe *contract.PoolExhaustedError
	if calls != 1 || !errors.As(err, &pe) {
		t.Errorf("pool timeout: %d calls, %v", calls, err)
	}
}

func TestJudge(t *testing.T) {
	node := func(policy, aof, save string) nodeReport {
		return nodeReport{config: map[string]string{"maxmemory-policy": policy, "appendonly": aof, "save": save}, info: map[string]string{"evicted_keys": "0"}}
	}
	hidden := nodeReport{configErr: proto("ERR unknown command 'CONFIG'"), config: map[string]string{}, info: map[string]string{}}
	cases := []struct {
		name    string
		nodes   []nodeReport
		s       Settings
		setting string // "" accepted
	}{
		{"noeviction aof", []nodeReport{node("noeviction", "yes", "")}, Settings{}, ""},
		{"volatile-lfu rdb", []nodeReport{node("volatile-lfu", "no", "3600 1")}, Settings{}, ""},
		{"allkeys-random", []nodeReport{node("allkeys-random", "yes", "")}, Settings{}, "maxmemory-policy"},
		{"volatile-ttl", []nodeReport{node("volatile-ttl", "yes", "")}, Settings{}, "maxmemory-policy"},
		{"no persistence durable", []nodeReport{node("noeviction", "no", "")}, Settings{}, "persistence"},
		{"no persistence volatile ok", []nodeReport{node("noeviction", "no", "")}, Settings{Volatile: true}, ""},
		{"one bad master", []nodeReport{node("noeviction", "yes", ""), node("allkeys-lru", "yes", "")}, Settings{}, "maxmemory-policy"},
		{"config hidden", []nodeReport{hidden}, Settings{}, "CONFIG"},
		{"config hidden assumed", []nodeReport{hidden}, Settings{AssumeDurable: true}, ""},
	}
	for _, c := range cases {
		rep, err := judge(c.nodes, c.s)
		var pe *contract.PreflightError
		switch {
		case c.setting == "" && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.setting != "" && (!errors.As(err, &pe) || pe.Setting != c.setting):
			t.Errorf("%s: got %v, want a refusal of %s", c.name, err, c.setting)
		case c.setting != "" && rep.Verdict() != contract.HealthFail:
			t.Errorf("%s: verdict %s", c.name, rep.Verdict())
		}
		if c.setting == "CONFIG" && !strings.Contains(err.Error(), "AssumeDurable") {
			t.Errorf("%s: %v does not name AssumeDurable", c.name, err)
		}
	}
}

func TestDueMicros(t *testing.T) {
	now := time.Unix(1893456000, 123456789) // sub-microsecond part: the wall clock has one
	if got, want := dueMicros(time.Time{}, now), nowMicros(now); got != want {
		t.Errorf("due now: score %s, want %s (the score a claim at the same instant compares with)", got, want)
	}
	if got, want := dueMicros(now, now), nowMicros(now); got != want {
		t.Errorf("due at now: score %s, want %s", got, want)
	}
	later := now.Add(1500 * time.Nanosecond)
	if got, want := dueMicros(later, now), "1893456000123459"; got != want {
		t.Errorf("due later: score %s, want %s (rounded up: never early)", got, want)
	}
}

// A record encoded by Enqueue (every field but the member) and completed
// the way the enqueue script does reads back field for field, whatever
// the fields hold.
func TestRecordRoundTrip(t *testing.T) {
	head := record{fState: "q", fAttempts: "0", fNotBefore: "", fEnqueuedAt: "1893456000000000000",
		fTenant: "a:b{c}", fID: "12:x", fMetadata: `{"k":"v:1"}`, fPayload: "\x00payload:with:colons"}
	member := "000000000000002a" + itemRef(head[fTenant], head[fID])
	got, ok := parseRecord(head.encodeHead() + strconv.Itoa(len(member)) + ":" + member)
	want := head
	want[fMember] = member
	if !ok || got != want {
		t.Fatalf("parseRecord = %q, %v; want %q", got, ok, want)
	}
	if _, ok := parseRecord(head.encodeHead()); ok {
		t.Error("a record without its member parsed")
	}
	if _, ok := parseRecord(""); ok {
		t.Error("an empty record parsed")
	}
	it := got.item("jobs")
	if it.Tenant != "a:b{c}" || it.ID != "12:x" || string(it.Payload) != "\x00payload:with:colons" || it.Metadata["k"] != "v:1" ||
		it.State != contract.StateQueued || it.EnqueuedAt.UnixNano() != 1893456000000000000 || it.Queue != "jobs" {
		t.Errorf("item = %+v", it)
	}
}

func TestWaitReplicasNeedsOneConnection(t *testing.T) {
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"offline.invalid:6379"}})
	defer cc.Close()
	for name, err := range map[string]error{
		"queue": func() error { _, err := NewQueue(cc, nil, Settings{WaitReplicas: 1}); return err }(),
		"state": func() error { _, err := NewState(cc, nil, Settings{WaitReplicas: 1}); return err }(),
	} {
		var ve *contract.ValidationError
		if !errors.As(err, &ve) || ve.Field != "Settings.WaitReplicas" || !strings.Contains(err.Error(), "min-replicas-to-write") {
			t.Errorf("%s over a cluster client with WaitReplicas: %v; want a ValidationError naming the setting and the fix", name, err)
		}
	}
	if _, err := NewQueue(offlineClient(t), nil, Settings{WaitReplicas: 1}); err != nil {
		t.Errorf("a *redis.Client with WaitReplicas: %v", err)
	}
}

func TestPreflightReportsReplication(t *testing.T) {
	node := func(role string, replicas, minRep int) nodeReport {
		return nodeReport{
			config: map[string]string{"maxmemory-policy": "noeviction", "appendonly": "yes", "save": "",
				"min-replicas-to-write": strconv.Itoa(minRep), "min-replicas-max-lag": "10"},
			info: map[string]string{"role": role, "connected_slaves": strconv.Itoa(replicas)},
		}
	}
	for _, c := range []struct {
		name   string
		n      nodeReport
		s      Settings
		status string
		fix    string
	}{
		{"standalone without replicas", node("master", 0, 0), Settings{}, contract.HealthOK, ""},
		{"replica, asynchronous", node("master", 1, 0), Settings{}, contract.HealthWarn, "asynchronous"},
		{"replica and WAIT", node("master", 1, 0), Settings{WaitReplicas: 1}, contract.HealthOK, ""},
		{"replica and min-replicas-to-write", node("master", 1, 1), Settings{}, contract.HealthOK, ""},
		{"WAIT for more than are connected", node("master", 1, 0), Settings{WaitReplicas: 2}, contract.HealthWarn, "Settings.WaitReplicas"},
		{"a replica reached", node("slave", 0, 0), Settings{}, contract.HealthWarn, "READONLY"},
	} {
		s, _ := c.s.normalized()
		rep, err := judge([]nodeReport{c.n}, s)
		if err != nil {
			t.Errorf("%s: refused: %v", c.name, err)
			continue
		}
		var got *contract.HealthCheck
		for i := range rep.Checks {
			if rep.Checks[i].Name == "replication" {
				got = &rep.Checks[i]
			}
		}
		if got == nil || got.Status != c.status || !strings.Contains(got.Fix, c.fix) {
			t.Errorf("%s: replication check %+v; want %s with a fix about %q", c.name, got, c.status, c.fix)
		}
		if rep.Details["role"] != c.n.info["role"] || rep.Details["connected replicas"] != c.n.info["connected_slaves"] {
			t.Errorf("%s: details %v lack the role and replicas", c.name, rep.Details)
		}
	}
}
