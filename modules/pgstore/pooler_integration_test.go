//go:build integration

package pgstore_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/pgstore"
)

// quietProxy forwards connections to PostgreSQL and, while quiet, drops
// the NotificationResponse messages on their way to the client: a path
// that carries every query and reply but no notification, which is what
// a listener behind PgBouncer in transaction mode gets. With a delay it
// holds each new connection that long before it reaches the server: a
// server slow to accept connections.
type quietProxy struct {
	ln      net.Listener
	target  string
	quiet   atomic.Bool
	delay   atomic.Int64 // nanoseconds
	closing chan struct{}
	mu      sync.Mutex
	conns   map[net.Conn]bool
	wg      sync.WaitGroup
}

func startQuietProxy(t *testing.T, target string) *quietProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &quietProxy{ln: ln, target: target, conns: map[net.Conn]bool{}, closing: make(chan struct{})}
	p.wg.Go(p.accept)
	t.Cleanup(p.close)
	return p
}

func (p *quietProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		p.conns[c] = true
		p.mu.Unlock()
		p.wg.Go(func() { p.serve(c) })
	}
}

func (p *quietProxy) serve(c net.Conn) {
	defer c.Close()
	select {
	case <-time.After(time.Duration(p.delay.Load())):
	case <-p.closing:
		return
	}
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	p.mu.Lock()
	p.conns[s] = true
	p.mu.Unlock()
	done := make(chan struct{})
	go func() { _, _ = io.Copy(s, c); s.Close(); c.Close(); close(done) }()
	p.fromServer(c, s)
	s.Close()
	c.Close()
	<-done
}

// fromServer copies the server's messages (a type byte, then a length
// that counts itself) and leaves out notifications while quiet. With
// sslmode=disable every server message has that frame from the first.
func (p *quietProxy) fromServer(dst, src net.Conn) {
	r := bufio.NewReader(src)
	var head [5]byte
	for {
		if _, err := io.ReadFull(r, head[:]); err != nil {
			return
		}
		body := make([]byte, binary.BigEndian.Uint32(head[1:])-4)
		if _, err := io.ReadFull(r, body); err != nil {
			return
		}
		if head[0] == 'A' && p.quiet.Load() {
			continue
		}
		if _, err := dst.Write(append(head[:], body...)); err != nil {
			return
		}
	}
}

func (p *quietProxy) close() {
	close(p.closing)
	p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// through returns cfg aimed at the proxy.
func (p *quietProxy) through(t *testing.T, cfg *pgx.ConnConfig) *pgx.ConnConfig {
	t.Helper()
	host, port, _ := net.SplitHostPort(p.ln.Addr().String())
	c := cfg.Copy()
	c.Host = host
	n, _ := strconv.Atoi(port)
	c.Port = uint16(n)
	c.Fallbacks = nil
	return c
}

func hostPort(t *testing.T, dsn string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// A listener whose connection takes its LISTENs but never delivers a
// notification does not start: Start fails with *ListenerProbeError once
// the probe's time is up, and nothing keeps running (goleak checks).
func TestListenerProbeFailsAtStart(t *testing.T) {
	d := newTestDB(t)
	p := startQuietProxy(t, hostPort(t, d.dsn))
	p.quiet.Store(true)
	l, err := pgstore.NewListener(p.through(t, d.connConfig(t)), pgstore.ListenerSettings{ProbeTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	err = l.Start(ctxT(t, 30*time.Second))
	var pe *pgstore.ListenerProbeError
	if !errors.As(err, &pe) || pe.Timeout != 500*time.Millisecond || pe.Pooled || pe.Channel != l.ProbeChannel() {
		t.Fatalf("Start on a path without notifications: %v, want *ListenerProbeError (500ms, not pooled, its probe channel)", err)
	}
	if contract.Retryable(err) {
		t.Error("the probe error is retryable")
	}
	st := l.Stats()
	if st.Connected || st.Probes != 0 || st.ProbeFailures != 1 || !errors.As(st.Err, &pe) {
		t.Errorf("stats after the failed start: %+v", st)
	}
	_ = l.Close()
}

// Every connection is probed: at start, and after a reconnect. A
// reconnect onto a path that does not deliver is reported (Stats().Err,
// the queue's Health fails the listener check), sends no synthetic wake,
// and is retried with backoff until the path delivers again; then the
// listener reports itself connected and wakes its subscribers.
func TestListenerProbesEveryConnection(t *testing.T) {
	d := newTestDB(t)
	ctx := ctxT(t, time.Minute)
	p := startQuietProxy(t, hostPort(t, d.dsn))
	l, err := pgstore.NewListener(p.through(t, d.connConfig(t)), pgstore.ListenerSettings{ProbeTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.Listen(ctx, d.schema); err != nil {
		t.Fatal(err)
	}
	st := l.Stats()
	if !st.Connected || st.Probes != 1 || st.ProbeFailures != 0 || st.ProbeRoundTrip <= 0 || st.Err != nil {
		t.Fatalf("stats after start: %+v, want connected after one probe", st)
	}
	q := newQueue(t, d, pgstore.Settings{Listener: l})
	raw, stop := l.Subscribe(d.schema)
	defer stop()

	p.quiet.Store(true)
	var killed bool
	if err := d.pool.QueryRow(ctx, "SELECT pg_terminate_backend($1)", int32(st.BackendPID)).Scan(&killed); err != nil || !killed {
		t.Fatalf("pg_terminate_backend(%d): %v, %v", st.BackendPID, killed, err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for l.Stats().ProbeFailures < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("no failed probe after the reconnect: %+v", l.Stats())
		}
		time.Sleep(20 * time.Millisecond)
	}
	st = l.Stats()
	var pe *pgstore.ListenerProbeError
	if st.Connected || st.Reconnects != 0 || !errors.As(st.Err, &pe) {
		t.Errorf("stats while the path does not deliver: %+v", st)
	}
	h, err := q.Health(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range h.Checks {
		if c.Name == "listener" {
			found = true
			if c.Status != contract.HealthFail || c.Fix == "" {
				t.Errorf("listener health while not delivering: %+v, want fail with a fix", c)
			}
		}
	}
	if !found || h.Details["listener probe failures"] == "0" {
		t.Errorf("health names no failing listener: %+v", h)
	}
	select {
	case n := <-raw:
		t.Fatalf("a wake (%+v) from a connection that does not deliver", n)
	default:
	}

	p.quiet.Store(false)
	for synthetic := false; !synthetic; {
		select {
		case n := <-raw:
			synthetic = n.Synthetic
		case <-time.After(20 * time.Second):
			t.Fatalf("no synthetic wake once the path delivers again: %+v", l.Stats())
		}
	}
	st = l.Stats()
	if !st.Connected || st.Reconnects != 1 || st.Probes != 2 || st.Err != nil {
		t.Errorf("stats after recovery: %+v, want connected, one reconnect, two probes", st)
	}
	if err := pgstore.Notify(ctx, d.pool, d.schema, "after"); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-raw:
		if n.Payload != "after" {
			t.Errorf("got %+v", n)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no notification after recovery")
	}
}

// A pool with room opens a connection when every one it has is busy; a
// server slow to accept it is not an exhausted pool. Slower than
// AcquireTimeout but within the connection's ConnectTimeout, the call
// waits and succeeds; slower than that, it fails as the retryable outage
// it is, never as a bare context error.
func TestSlowConnectIsNotPoolExhaustion(t *testing.T) {
	d := newTestDB(t)
	ctx := ctxT(t, time.Minute)
	p := startQuietProxy(t, hostPort(t, d.dsn))
	pool := func(connectTimeout time.Duration) *pgxpool.Pool {
		cfg, err := pgxpool.ParseConfig(d.dsn)
		if err != nil {
			t.Fatal(err)
		}
		cfg.ConnConfig = p.through(t, d.connConfig(t))
		cfg.ConnConfig.ConnectTimeout = connectTimeout
		cfg.MaxConns = 2
		pl, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pl.Close)
		return pl
	}
	s := pgstore.Settings{AcquireTimeout: 100 * time.Millisecond}

	p.delay.Store(int64(600 * time.Millisecond))
	slow := pool(5 * time.Second)
	st, err := pgstore.NewState(slow, nil, s)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.PutRun(ctx, contract.Run{Tenant: "acme", ID: "r"}); err != nil {
		t.Fatalf("PutRun on a pool whose new connection takes 600 ms (acquire timeout 100 ms, connect timeout 5 s): %v", err)
	}

	p.delay.Store(int64(3 * time.Second))
	st, err = pgstore.NewState(pool(500*time.Millisecond), nil, s)
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.GetRun(ctx, "acme", "r")
	var sp *contract.StatePersistenceError
	var pe *contract.PoolExhaustedError
	if !errors.As(err, &sp) || sp.Reason != contract.ReasonUnavailable || !contract.Retryable(err) || errors.As(err, &pe) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("GetRun when no connection opens within the connect timeout: %v (%T), want a retryable unavailable StatePersistenceError", err, err)
	}
}
