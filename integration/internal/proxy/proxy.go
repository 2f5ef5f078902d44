// Package proxy is a loopback TCP proxy that can cut every connection
// passing through it, to put a network failure between a client and a
// server inside one test process.
package proxy

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Proxy forwards connections from its own loopback address to a target.
type Proxy struct {
	target string
	ln     net.Listener

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup

	cuts     atomic.Int64 // Cut calls
	severed  atomic.Int64 // connections closed by cuts
	accepted atomic.Int64
	stop     chan struct{}
	closed   atomic.Bool
	muted    atomic.Bool  // drop what the server sends
	delay    atomic.Int64 // nanoseconds each read from the server waits before it is passed on
}

// Start listens on a free loopback port and forwards every connection to
// target.
func Start(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{target: target, ln: ln, conns: map[net.Conn]struct{}{}, stop: make(chan struct{})}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's host:port, to give clients instead of the target's.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Port is the proxy's port.
func (p *Proxy) Port() int { return p.ln.Addr().(*net.TCPAddr).Port }

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.accepted.Add(1)
		s, err := net.DialTimeout("tcp", p.target, 2*time.Second)
		if err != nil {
			c.Close()
			continue
		}
		if !p.track(c, s) {
			return
		}
		p.wg.Add(2)
		go p.pipe(c, s, true)
		go p.pipe(s, c, false)
	}
}

func (p *Proxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed.Load() {
		for _, c := range cs {
			c.Close()
		}
		return false
	}
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
	return true
}

// pipe copies one direction; when either side ends, both are closed, so
// a cut looks to the client like a server that vanished mid-reply. The
// server-to-client direction drops what it reads while the proxy is muted.
func (p *Proxy) pipe(dst, src net.Conn, fromServer bool) {
	defer p.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if d := p.delay.Load(); fromServer && n > 0 && d > 0 {
			time.Sleep(time.Duration(d))
		}
		if n > 0 && !(fromServer && p.muted.Load()) {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	dst.Close()
	src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}

// Cut closes every connection open right now (new ones are accepted as
// usual) and returns how many client connections it severed.
func (p *Proxy) Cut() int {
	p.mu.Lock()
	n := len(p.conns) / 2
	for c := range p.conns {
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // a reset, not a polite FIN
		}
		c.Close()
		delete(p.conns, c)
	}
	p.mu.Unlock()
	p.cuts.Add(1)
	p.severed.Add(int64(n))
	return n
}

// Delay makes every reply of the server wait d before it is passed on
// (each read from the server's side, so a reply that arrives in pieces
// waits once per piece): a slow network, or a server far away.
func (p *Proxy) Delay(d time.Duration) { p.delay.Store(int64(d)) }

// Mute makes the proxy drop every reply of the server, from now until
// Unmute: requests still arrive and run; their answers are lost.
func (p *Proxy) Mute() { p.muted.Store(true) }

// Unmute lets replies through again.
func (p *Proxy) Unmute() { p.muted.Store(false) }

// CutEvery cuts every connection each interval until StopCutting or Close,
// skipping the ticks at which ready, when not nil, reports false.
func (p *Proxy) CutEvery(interval time.Duration, ready func() bool) {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				if ready == nil || ready() {
					p.Cut()
				}
			}
		}
	}()
}

// StopCutting ends CutEvery.
func (p *Proxy) StopCutting() {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
}

// Stats returns how many cuts were made, how many client connections they
// severed, and how many connections were accepted.
func (p *Proxy) Stats() (cuts, severed, accepted int64) {
	return p.cuts.Load(), p.severed.Load(), p.accepted.Load()
}

// Close stops listening, closes every connection and waits for the
// proxy's goroutines.
func (p *Proxy) Close() error {
	if p.closed.Swap(true) {
		return errors.New("proxy: already closed")
	}
	p.StopCutting()
	err := p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	return err
}
