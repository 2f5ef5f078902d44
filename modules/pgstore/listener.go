package pgstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/backoff"
)

// Defaults applied to the zero fields of [ListenerSettings].
const (
	// DefaultListenerBuffer is each subscriber's channel capacity.
	DefaultListenerBuffer = 16
	// DefaultMinBackoff is the wait after the first failed reconnect.
	DefaultMinBackoff = 50 * time.Millisecond
	// DefaultMaxBackoff caps the doubling wait between reconnects.
	DefaultMaxBackoff = 2 * time.Second
	// DefaultConnectTimeout bounds one connection attempt.
	DefaultConnectTimeout = 5 * time.Second
	// DefaultProbeTimeout is how long a new connection's probe NOTIFY may
	// take to come back before the connection counts as not delivering.
	DefaultProbeTimeout = 5 * time.Second
)

// ListenerSettings tune a [Listener]. The zero value is usable.
type ListenerSettings struct {
	// Buffer is each subscriber's channel capacity; a notification for a
	// full subscriber is dropped, never waited for. Zero means
	// DefaultListenerBuffer.
	Buffer int
	// MinBackoff and MaxBackoff bound the delay between failed connection
	// attempts; the first attempt after a lost connection is immediate.
	// Each delay is drawn between half its step and the whole step, so
	// listeners cut off together (a server restart) do not reconnect in
	// step. Zero means DefaultMinBackoff and DefaultMaxBackoff.
	MinBackoff, MaxBackoff time.Duration
	// ConnectTimeout bounds one connection attempt. Zero means
	// DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// ProbeTimeout bounds the wait for the probe NOTIFY each new
	// connection sends itself (from a second, short-lived connection)
	// once it LISTENs: a connection whose probe does not come back in time
	// delivers nothing and is dropped with a *ListenerProbeError. Zero
	// means DefaultProbeTimeout.
	ProbeTimeout time.Duration
}

// Notification is a NOTIFY the listener received, or a synthetic wake.
type Notification struct {
	Channel string
	Payload string
	// Synthetic marks the wake sent to every subscriber after the
	// listener reconnected: notifications sent while it was away are
	// lost, so whoever waits on them must look for work now.
	Synthetic bool
}

// ListenerStats are the listener's counters.
type ListenerStats struct {
	// Connected is true while the connection is up, LISTENs every channel
	// and has had its probe NOTIFY back: it is known to deliver.
	Connected  bool
	BackendPID uint32 // the server process of the current connection, as given at start-up; 0 when down
	Reconnects int64  // connections re-established after the first
	Received   int64  // notifications received from the server (probes not counted)
	Dropped    int64  // deliveries dropped because a subscriber's buffer was full
	Synthetic  int64  // synthetic wakes sent (one per reconnect)
	LastWake   time.Time
	// Probes counts probe NOTIFYs that came back (one per connection),
	// ProbeFailures the connections dropped because theirs did not.
	Probes, ProbeFailures int64
	// ProbeRoundTrip is the last successful probe's time from send to
	// receipt.
	ProbeRoundTrip time.Duration
	// Err is why the listener is not connected: the last failed
	// connection attempt or probe (a *ListenerProbeError when the
	// connection took its LISTENs and delivered nothing). Nil while
	// connected.
	Err error
}

// Listener receives PostgreSQL notifications on a dedicated connection
// outside any pool (a pooled connection cannot hold a LISTEN: it goes back
// to the pool and its notifications with it), so budget the pool size
// plus one connection per listening process.
//
// One goroutine owns the connection: it issues every LISTEN itself and
// waits for notifications in between, so no query can wait behind a
// receive loop that is not running, and the connection lives exactly as
// long as the loop. Notifications fan out to subscribers without ever
// blocking: a subscriber whose buffer is full misses the wake. When the
// connection breaks the loop reconnects at once, then with backoff from
// 50 ms doubling to 2 s (each wait drawn from half its step to the whole
// step), LISTENs every channel again and sends each subscriber a
// synthetic wake.
//
// A connection that takes its LISTENs is not yet one that delivers:
// behind PgBouncer in transaction mode it never does, without an error.
// So every connection, the first and each reconnect, LISTENs a channel of
// the listener's own and waits for a NOTIFY sent there from a second,
// short-lived connection; only then does it count as connected (and a
// reconnect send its synthetic wake). A probe that does not come back
// within ProbeTimeout drops the connection with a *ListenerProbeError.
type Listener struct {
	config   *pgx.ConnConfig
	probeCfg *pgx.ConnConfig // the probe sender's: the caller's config as given
	settings ListenerSettings
	// probeChannel is this listener's own channel for its probes, so
	// listeners in other processes never see them.
	probeChannel string

	mu        sync.Mutex
	want      map[string]bool // channels to LISTEN
	have      map[string]bool // channels LISTENed on the current connection
	changed   chan struct{}   // closed and replaced whenever have changes
	interrupt context.CancelFunc
	subs      map[*subscriber]struct{}
	started   bool
	cancel    context.CancelFunc
	done      chan struct{}

	connected  atomic.Bool
	pid        atomic.Uint32
	reconnects atomic.Int64
	received   atomic.Int64
	dropped    atomic.Int64
	synthetic  atomic.Int64
	lastWake   atomic.Int64 // unix nanoseconds
	probes     atomic.Int64
	probeFails atomic.Int64
	probeRTT   atomic.Int64 // nanoseconds
	readyAt    atomic.Int64 // unix nanoseconds: when the current connection was proved
	errMu      sync.Mutex
	err        error // Stats().Err

	// jitter draws the fraction of a reconnect wait taken off its step;
	// nil means math/rand/v2 (tests pin it).
	jitter func() float64
}

type subscriber struct {
	channel string
	deliver func(Notification) bool // must not block; false means dropped
}

// NewListener returns a listener that will connect with config (a copy is
// taken). It connects when Start is called.
func NewListener(config *pgx.ConnConfig, s ListenerSettings) (*Listener, error) {
	if config == nil {
		return nil, &contract.ValidationError{Field: "config", Problem: "is nil; parse one with pgx.ParseConfig"}
	}
	cfg := config.Copy()
	// Interrupting a wait to LISTEN another channel must leave the
	// connection usable: move the read deadline instead of sending a
	// cancel request, which could land on the LISTEN that follows.
	cfg.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.DeadlineContextWatcherHandler{Conn: c.Conn()}
	}
	if s.Buffer <= 0 {
		s.Buffer = DefaultListenerBuffer
	}
	if s.MinBackoff <= 0 {
		s.MinBackoff = DefaultMinBackoff
	}
	if s.MaxBackoff <= 0 {
		s.MaxBackoff = DefaultMaxBackoff
	}
	if s.MaxBackoff < s.MinBackoff {
		s.MaxBackoff = s.MinBackoff
	}
	if s.ConnectTimeout <= 0 {
		s.ConnectTimeout = DefaultConnectTimeout
	}
	if s.ProbeTimeout <= 0 {
		s.ProbeTimeout = DefaultProbeTimeout
	}
	var raw [8]byte
	_, _ = rand.Read(raw[:])
	return &Listener{
		config: cfg, probeCfg: config.Copy(), settings: s, probeChannel: "adk_probe_" + hex.EncodeToString(raw[:]),
		want: map[string]bool{}, have: map[string]bool{}, changed: make(chan struct{}),
		subs: map[*subscriber]struct{}{},
	}, nil
}

// Listen connects to dsn and starts a listener on the channels. The DSN
// never appears in an error.
func Listen(ctx context.Context, dsn contract.Secret, s ListenerSettings, channels ...string) (*Listener, error) {
	cfg, err := pgx.ParseConfig(dsn.Reveal())
	if err != nil {
		return nil, &contract.ValidationError{Field: "DSN", Problem: "cannot be parsed as a PostgreSQL connection string"}
	}
	l, err := NewListener(cfg, s)
	if err != nil {
		return nil, err
	}
	for _, c := range channels {
		if err := validateChannel(c); err != nil {
			return nil, err
		}
		l.want[c] = true
	}
	if err := l.Start(ctx); err != nil {
		return nil, err
	}
	return l, nil
}

// Start connects, LISTENs the channels asked for so far and starts the
// receive loop; it returns once the connection has proved that it
// delivers: a probe NOTIFY sent from a second connection came back. If
// the first connection fails, Start returns its error and nothing keeps
// running: a *ListenerProbeError when the probe did not come back within
// ProbeTimeout (PgBouncer in transaction mode, say), a *PoolerError when
// a pooler refused the connection's startup parameters. Later failures
// are reconnected in the background until Close; every new connection is
// probed the same way before it counts as connected.
func (l *Listener) Start(ctx context.Context) error {
	l.mu.Lock()
	if l.started {
		l.mu.Unlock()
		return errors.New("pgstore: listener already started")
	}
	l.started = true
	runCtx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	l.done = make(chan struct{})
	l.mu.Unlock()

	first := make(chan error, 1)
	go l.loop(runCtx, first)
	select {
	case err := <-first:
		if err != nil {
			cancel()
			<-l.done
			return err
		}
		return nil
	case <-ctx.Done():
		cancel()
		<-l.done
		return ctx.Err()
	}
}

// Close stops the loop and closes its connection. It is safe to call more
// than once.
func (l *Listener) Close() error {
	l.mu.Lock()
	cancel, done := l.cancel, l.done
	l.mu.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	<-done
	return nil
}

// Listen LISTENs the channels (if not already) and waits until the
// current connection listens on all of them, or ctx ends.
func (l *Listener) Listen(ctx context.Context, channels ...string) error {
	for _, c := range channels {
		if err := validateChannel(c); err != nil {
			return err
		}
	}
	for {
		l.mu.Lock()
		missing := false
		for _, c := range channels {
			if !l.want[c] {
				l.want[c] = true
				if l.interrupt != nil {
					l.interrupt()
				}
			}
			if !l.have[c] {
				missing = true
			}
		}
		changed := l.changed
		l.mu.Unlock()
		if !missing {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// listens reports whether the current connection LISTENs channel.
func (l *Listener) listens(channel string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.have[channel]
}

// Subscribe returns a channel that receives the notifications of channel
// (LISTENed in the background if it is new) and the synthetic wakes, and
// a func that ends the subscription. The channel is buffered; what
// arrives while it is full is dropped. It is never closed.
func (l *Listener) Subscribe(channel string) (<-chan Notification, func()) {
	ch := make(chan Notification, l.settings.Buffer)
	cancel := l.subscribe(channel, func(n Notification) bool {
		select {
		case ch <- n:
			return true
		default:
			return false
		}
	})
	return ch, cancel
}

func (l *Listener) subscribe(channel string, deliver func(Notification) bool) func() {
	sub := &subscriber{channel: channel, deliver: deliver}
	l.mu.Lock()
	l.subs[sub] = struct{}{}
	if !l.want[channel] && validateChannel(channel) == nil {
		l.want[channel] = true
		if l.interrupt != nil {
			l.interrupt()
		}
	}
	l.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			delete(l.subs, sub)
			l.mu.Unlock()
		})
	}
}

// Stats returns the listener's counters.
func (l *Listener) Stats() ListenerStats {
	st := ListenerStats{
		Connected:      l.connected.Load(),
		BackendPID:     l.pid.Load(),
		Reconnects:     l.reconnects.Load(),
		Received:       l.received.Load(),
		Dropped:        l.dropped.Load(),
		Synthetic:      l.synthetic.Load(),
		Probes:         l.probes.Load(),
		ProbeFailures:  l.probeFails.Load(),
		ProbeRoundTrip: time.Duration(l.probeRTT.Load()),
	}
	if ns := l.lastWake.Load(); ns != 0 {
		st.LastWake = time.Unix(0, ns).UTC()
	}
	if !st.Connected {
		l.errMu.Lock()
		st.Err = l.err
		l.errMu.Unlock()
	}
	return st
}

func (l *Listener) setErr(err error) {
	l.errMu.Lock()
	l.err = err
	l.errMu.Unlock()
}

// ProbeChannel is the channel of the listener's own probes.
func (l *Listener) ProbeChannel() string { return l.probeChannel }

func (l *Listener) loop(ctx context.Context, first chan<- error) {
	defer close(l.done)
	// failures counts consecutive attempts that failed to connect, to
	// deliver, or whose connection broke soon after: the first reconnect
	// after a connection that lived is immediate, a flapping server (or a
	// path that never delivers) gets the backoff.
	failures := 0
	for {
		conn, err := l.connect(ctx)
		if err != nil {
			l.setErr(err)
			if first != nil {
				first <- err
				return
			}
			if !backoff.Sleep(ctx, l.backoff(failures)) {
				return
			}
			failures++
			continue
		}
		ready, err := l.receive(ctx, conn, first)
		var readyAt time.Time
		if ready {
			first = nil
			readyAt = l.connectedSince()
		}
		l.connected.Store(false)
		l.pid.Store(0)
		l.mu.Lock()
		l.have = map[string]bool{}
		close(l.changed)
		l.changed = make(chan struct{})
		l.mu.Unlock()
		closeConn(conn)
		if ctx.Err() != nil || err == nil {
			return
		}
		l.setErr(err)
		if first != nil {
			// The first connection broke or did not deliver before it was
			// ready: Start fails.
			first <- startErr(err)
			return
		}
		if ready && time.Since(readyAt) >= l.settings.MaxBackoff {
			failures = 0
			continue
		}
		if failures > 0 && !backoff.Sleep(ctx, l.backoff(failures-1)) {
			return
		}
		failures++
	}
}

// startErr is what Start returns for a first connection that failed
// after it was made: configuration errors as they are, anything else as
// the retryable outage it is.
func startErr(err error) error {
	var pe *ListenerProbeError
	var po *PoolerError
	if errors.As(err, &pe) || errors.As(err, &po) {
		return err
	}
	return &contract.QueueUnavailableError{Err: err}
}

// backoff is the wait before a reconnect after failures earlier failures
// in a row: MinBackoff doubled, capped at MaxBackoff, then drawn from
// half that step to the whole step.
func (l *Listener) backoff(failures int) time.Duration {
	return backoff.Backoff{Base: l.settings.MinBackoff, Max: l.settings.MaxBackoff,
		Jitter: backoff.EqualJitter, Rand: l.jitter}.Delay(failures)
}

func (l *Listener) connect(ctx context.Context) (*pgx.Conn, error) {
	cctx, cancel := context.WithTimeout(ctx, l.settings.ConnectTimeout)
	defer cancel()
	conn, err := pgx.ConnectConfig(cctx, l.config)
	if err != nil {
		if perr := poolerErr(err, 0); perr != err {
			return nil, perr
		}
		return nil, &contract.QueueUnavailableError{Err: err}
	}
	return conn, nil
}

// connectedSince is when the current connection was proved.
func (l *Listener) connectedSince() time.Time {
	return time.Unix(0, l.readyAt.Load())
}

// probe is the state of one connection's proof that it delivers.
type probe struct {
	nonce    string
	sentAt   time.Time
	deadline time.Time
	result   chan error // the sender's outcome
	pooled   bool
}

// receive LISTENs what is wanted, proves with a probe that notifications
// arrive, and dispatches them until the connection breaks (an error) or
// ctx ends (nil). ready reports whether the probe came back.
func (l *Listener) receive(ctx context.Context, conn *pgx.Conn, first chan<- error) (ready bool, err error) {
	reconnected := first == nil
	// The probe's sender runs beside the loop; it must not outlive it.
	pctx, stopProbe := context.WithCancel(ctx)
	var senders sync.WaitGroup
	defer func() {
		stopProbe()
		senders.Wait()
	}()
	var pending *probe
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{l.probeChannel}.Sanitize()); err != nil {
		if ctx.Err() != nil {
			return false, nil
		}
		return false, err
	}
	for {
		l.mu.Lock()
		var missing []string
		for c := range l.want {
			if !l.have[c] {
				missing = append(missing, c)
			}
		}
		var wctx context.Context
		var cancel context.CancelFunc
		if len(missing) == 0 {
			wctx, cancel = context.WithCancel(ctx)
			if pending != nil {
				wctx, cancel = context.WithDeadline(ctx, pending.deadline)
			}
			l.interrupt = cancel
		}
		l.mu.Unlock()

		if len(missing) > 0 {
			for _, c := range missing {
				if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{c}.Sanitize()); err != nil {
					if ctx.Err() != nil {
						return ready, nil
					}
					return ready, err
				}
			}
			l.mu.Lock()
			for _, c := range missing {
				l.have[c] = true
			}
			close(l.changed)
			l.changed = make(chan struct{})
			l.mu.Unlock()
			continue
		}

		// Every channel is listened: prove that notifications arrive.
		if !ready && pending == nil {
			pending, err = l.sendProbe(ctx, pctx, conn, &senders)
			if err != nil {
				cancel()
				if ctx.Err() != nil {
					return false, nil
				}
				return false, err
			}
			cancel()
			continue // wait again, now with the probe's deadline
		}

		n, err := conn.WaitForNotification(wctx)
		l.mu.Lock()
		l.interrupt = nil
		l.mu.Unlock()
		cancel()
		switch {
		case ctx.Err() != nil:
			return ready, nil
		case err != nil && pending != nil && !time.Now().Before(pending.deadline) && !conn.IsClosed():
			l.probeFails.Add(1)
			perr := &ListenerProbeError{Channel: l.probeChannel, Timeout: l.settings.ProbeTimeout, Pooled: pending.pooled}
			// The sender gives up at the same deadline: its last error, if it
			// had one, says why nothing came.
			select {
			case perr.Err = <-pending.result:
			case <-time.After(200 * time.Millisecond):
			}
			return false, perr
		case err != nil && wctx.Err() != nil && !conn.IsClosed():
			continue // interrupted to LISTEN a new channel
		case err != nil:
			return ready, err
		}
		if n.Channel == l.probeChannel {
			if pending != nil && n.Payload == pending.nonce {
				// The connection delivers: it is ready.
				l.probes.Add(1)
				l.probeRTT.Store(int64(time.Since(pending.sentAt)))
				pending = nil
				ready = true
				l.readyAt.Store(time.Now().UnixNano())
				l.connected.Store(true)
				l.pid.Store(conn.PgConn().PID())
				l.setErr(nil)
				if first != nil {
					first <- nil
					first = nil
				}
				if reconnected {
					l.reconnects.Add(1)
					l.wakeAll()
				}
			}
			continue // a late probe of an earlier connection
		}
		l.received.Add(1)
		l.dispatch(Notification{Channel: n.Channel, Payload: n.Payload})
	}
}

// sendProbe notes whether conn goes through a pooler and sends the probe
// NOTIFY from a connection of its own, in the background: a
// notification a connection sends itself comes back even through
// PgBouncer in transaction mode (it is delivered to whichever client the
// sending server connection serves at commit), so it would prove
// nothing. The sender is a short-lived extra connection, once per
// connection of the listener.
func (l *Listener) sendProbe(ctx, pctx context.Context, conn *pgx.Conn, senders *sync.WaitGroup) (*probe, error) {
	pid, err := backendPID(ctx, conn)
	if err != nil {
		return nil, err
	}
	var raw [8]byte
	_, _ = rand.Read(raw[:])
	p := &probe{nonce: hex.EncodeToString(raw[:]), sentAt: time.Now(), result: make(chan error, 1), pooled: pid != conn.PgConn().PID()}
	p.deadline = p.sentAt.Add(l.settings.ProbeTimeout)
	senders.Go(func() {
		sctx, cancel := context.WithDeadline(pctx, p.deadline)
		defer cancel()
		// Until it is sent or the time is up: a server that has just come
		// back may refuse the first connection while it starts.
		for {
			c, err := pgx.ConnectConfig(sctx, l.probeCfg)
			if err == nil {
				_, err = c.Exec(sctx, "SELECT pg_notify($1, $2)", pgx.QueryExecModeSimpleProtocol, l.probeChannel, p.nonce)
				closeConn(c)
			}
			if err == nil || !backoff.Sleep(sctx, 100*time.Millisecond) {
				p.result <- err
				return
			}
		}
	})
	return p, nil
}

func (l *Listener) dispatch(n Notification) {
	l.lastWake.Store(time.Now().UnixNano())
	l.mu.Lock()
	defer l.mu.Unlock()
	for s := range l.subs {
		if s.channel == n.Channel && !s.deliver(n) {
			l.dropped.Add(1)
		}
	}
}

// wakeAll sends every subscriber a synthetic wake.
func (l *Listener) wakeAll() {
	l.synthetic.Add(1)
	l.lastWake.Store(time.Now().UnixNano())
	l.mu.Lock()
	defer l.mu.Unlock()
	for s := range l.subs {
		if !s.deliver(Notification{Channel: s.channel, Synthetic: true}) {
			l.dropped.Add(1)
		}
	}
}
