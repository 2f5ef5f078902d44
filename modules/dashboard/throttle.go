package dashboard

import (
	"net"
	"sync"
	"time"

	"github.com/adkit/adk/modules/contract"
)

// Throttling of failed authentications. Every attempt (the sign-in form,
// a bearer header) is counted against its client address and against a
// token name: the name it claims (the form's name field, or the user of
// "Authorization: Basic"), or, for a bare secret that names no token, the
// one bucket all such attempts share. Past the limit of a bucket within a
// window, attempts in it are answered 429 with Retry-After until the
// window ends, the right secret included, so guessing is capped at the
// limit per window however fast a client sends.
const (
	throttleWindow = time.Minute
	// maxFailures is the failures one client address may have a window.
	maxFailures = 10
	// maxNameFailures is the failures against one claimed token name a
	// window, from every address together.
	maxNameFailures = 20
	// maxUnnamedFailures is the failures of secrets naming no token a
	// window, from every address together: it caps guessing spread over
	// many addresses, and is high enough that one address's guessing
	// never locks the others out.
	maxUnnamedFailures = 100
	// maxThrottleKeys bounds the buckets held; past it, addresses not
	// yet seen share one overflow bucket until windows end.
	maxThrottleKeys = 10_000
)

type bucket struct {
	start    time.Time
	failures int
}

type throttle struct {
	clock contract.Clock
	mu    sync.Mutex
	keys  map[string]*bucket
}

func newThrottle(clock contract.Clock) *throttle {
	return &throttle{clock: clock, keys: map[string]*bucket{}}
}

// key names a bucket; limit is its failures a window.
type throttleKey struct {
	key   string
	limit int
}

// keysFor are the buckets an attempt from addr naming name counts in.
func keysFor(addr, name string) []throttleKey {
	nk := throttleKey{"name\x00" + name, maxNameFailures}
	if name == "" {
		nk = throttleKey{"unnamed", maxUnnamedFailures}
	}
	return []throttleKey{{"addr\x00" + clientKey(addr), maxFailures}, nk}
}

// clientKey groups an IPv6 address by its /64, which one client usually
// holds whole; an IPv4 address stands alone.
func clientKey(addr string) string {
	ip := net.ParseIP(addr)
	if ip == nil {
		return addr
	}
	if ip.To4() == nil {
		return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
	}
	return ip.String()
}

func (t *throttle) get(k string, now time.Time) *bucket {
	b := t.keys[k]
	if b != nil && now.Sub(b.start) >= throttleWindow {
		b.start, b.failures = now, 0
	}
	if b == nil {
		if len(t.keys) >= maxThrottleKeys {
			for key, old := range t.keys {
				if now.Sub(old.start) >= throttleWindow {
					delete(t.keys, key)
				}
			}
			if len(t.keys) >= maxThrottleKeys {
				k = "overflow"
				if b = t.keys[k]; b != nil {
					return b
				}
			}
		}
		b = &bucket{start: now}
		t.keys[k] = b
	}
	return b
}

// allow reports whether an attempt may be tried now and, when not, how
// long until it may.
func (t *throttle) allow(addr, name string) (bool, time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.clock.Now()
	wait := time.Duration(0)
	for _, k := range keysFor(addr, name) {
		b := t.get(k.key, now)
		if b.failures >= k.limit {
			wait = max(wait, b.start.Add(throttleWindow).Sub(now))
		}
	}
	return wait == 0, wait
}

// failed counts a failed attempt in its buckets.
func (t *throttle) failed(addr, name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.clock.Now()
	for _, k := range keysFor(addr, name) {
		t.get(k.key, now).failures++
	}
}
