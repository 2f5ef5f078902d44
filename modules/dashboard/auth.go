package dashboard

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/adkit/adk/modules/contract"
)

const (
	sessionCookie = "adk_session"
	csrfField     = "csrf"
	csrfHeader    = "X-CSRF-Token"
	ctxSession    = "adk.session"
	ctxBearer     = "adk.bearer"
	ctxEnded      = "adk.ended"
)

// session is what the signed cookie carries. Every visitor gets one, signed
// in or not, so that even the sign-in form is CSRF-protected. Token names
// the token signed in with ("" for a visitor who has not signed in).
type session struct {
	ID      string
	Token   string
	Expires time.Time
}

// authed reports whether the session is signed in.
func (s session) authed() bool { return s.Token != "" }

// auth signs sessions and checks tokens. The signing key is random per
// process: restarting the dashboard signs everyone out, and no key is
// ever stored. Signed-in sessions are also held here, so that signing
// out ends one for good (a copy of its cookie is worthless after) and an
// idle one ends on time.
type auth struct {
	tokens []Token
	// hashes are the tokens' secrets hashed, compared in constant time.
	hashes   [][32]byte
	key      []byte
	ttl      time.Duration
	idle     time.Duration
	clock    contract.Clock
	throttle *throttle

	mu   sync.Mutex
	live map[string]*liveSession // signed-in sessions by id
}

// liveSession is a signed-in session as the process knows it.
type liveSession struct {
	token string
	seen  time.Time // its last request that was not a live refresh
}

// maxSessions bounds the signed-in sessions held; past it the one idle
// longest is ended to make room.
const maxSessions = 10_000

func newAuth(tokens []Token, ttl, idle time.Duration, clock contract.Clock) (*auth, error) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	a := &auth{tokens: tokens, key: key, ttl: ttl, idle: idle, clock: clock, throttle: newThrottle(clock), live: map[string]*liveSession{}}
	for _, t := range tokens {
		a.hashes = append(a.hashes, sha256.Sum256([]byte(t.Secret.Reveal())))
	}
	return a, nil
}

// enabled reports whether any token is configured.
func (a *auth) enabled() bool { return len(a.tokens) > 0 }

// writable reports whether any token may act.
func (a *auth) writable() bool {
	for _, t := range a.tokens {
		if t.Access == ReadWrite {
			return true
		}
	}
	return false
}

// match finds the token whose secret is given, and which is named name
// when name is not "". Every token is compared, in constant time, so the
// time taken says nothing about which one matched, or how nearly.
func (a *auth) match(name, given string) (*Token, bool) {
	if given == "" {
		return nil, false
	}
	h := sha256.Sum256([]byte(given))
	found := -1
	for i := range a.hashes {
		eq := subtle.ConstantTimeCompare(h[:], a.hashes[i][:])
		found = subtle.ConstantTimeSelect(eq, i, found)
	}
	if found < 0 || (name != "" && a.tokens[found].Name != name) {
		return nil, false
	}
	return &a.tokens[found], true
}

// named returns the token called name.
func (a *auth) named(name string) (*Token, bool) {
	for i := range a.tokens {
		if a.tokens[i].Name == name {
			return &a.tokens[i], true
		}
	}
	return nil, false
}

// attempt checks one credential under the throttle: a refusal for too
// many failures is a *throttledError, a wrong credential errWrongToken.
func (a *auth) attempt(addr, name, secret string) (*Token, error) {
	if ok, wait := a.throttle.allow(addr, name); !ok {
		return nil, &throttledError{wait: wait}
	}
	t, ok := a.match(name, secret)
	if !ok {
		a.throttle.failed(addr, name)
		return nil, errWrongToken
	}
	return t, nil
}

var errWrongToken = errors.New("wrong token")

// throttledError is an attempt refused by the throttle.
type throttledError struct{ wait time.Duration }

func (e *throttledError) Error() string {
	return fmt.Sprintf("too many failed attempts from this address or at this token; try again in %s", retryAfter(e.wait)+"s")
}

// retryAfter is a wait as whole seconds, rounded up, at least 1.
func retryAfter(d time.Duration) string {
	return strconv.Itoa(max(1, int((d+time.Second-1)/time.Second)))
}

// tooMany answers a throttled attempt: 429 with Retry-After.
func tooMany(c echo.Context, e *throttledError) error {
	c.Response().Header().Set("Retry-After", retryAfter(e.wait))
	return echo.NewHTTPError(http.StatusTooManyRequests, e.Error())
}

func (a *auth) mac(parts ...string) string {
	m := hmac.New(sha256.New, a.key)
	for _, p := range parts {
		m.Write([]byte(p))
		m.Write([]byte{0})
	}
	return hex.EncodeToString(m.Sum(nil))
}

func (a *auth) newSession(token string) (session, error) {
	id := make([]byte, 16)
	if _, err := rand.Read(id); err != nil {
		return session{}, err
	}
	s := session{ID: hex.EncodeToString(id), Token: token, Expires: a.clock.Now().Add(a.ttl)}
	if token != "" {
		a.mu.Lock()
		defer a.mu.Unlock()
		if len(a.live) >= maxSessions {
			oldest := ""
			for id, ls := range a.live {
				if oldest == "" || ls.seen.Before(a.live[oldest].seen) {
					oldest = id
				}
			}
			delete(a.live, oldest)
		}
		a.live[s.ID] = &liveSession{token: token, seen: a.clock.Now()}
	}
	return s, nil
}

// end signs a session out.
func (a *auth) end(s session) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.live, s.ID)
}

// alive reports whether a signed-in session still holds, and counts the
// request as activity unless it is a page's own live refresh. A session
// idle too long is ended.
func (a *auth) alive(s session, activity bool) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	ls, ok := a.live[s.ID]
	if !ok || ls.token != s.Token {
		return false
	}
	now := a.clock.Now()
	if now.Sub(ls.seen) >= a.idle {
		delete(a.live, s.ID)
		return false
	}
	if activity {
		ls.seen = now
	}
	return true
}

func (a *auth) encode(s session) string {
	exp := strconv.FormatInt(s.Expires.Unix(), 10)
	return s.ID + "." + s.Token + "." + exp + "." + a.mac("session", s.ID, s.Token, exp)
}

func (a *auth) decode(v string) (session, bool) {
	parts := strings.Split(v, ".")
	if len(parts) != 4 || len(parts[0]) != 32 {
		return session{}, false
	}
	want := a.mac("session", parts[0], parts[1], parts[2])
	if !hmac.Equal([]byte(want), []byte(parts[3])) {
		return session{}, false
	}
	exp, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil {
		return session{}, false
	}
	s := session{ID: parts[0], Token: parts[1], Expires: time.Unix(exp, 0)}
	if !a.clock.Now().Before(s.Expires) {
		return session{}, false
	}
	if _, ok := a.named(s.Token); !ok {
		s.Token = ""
	}
	return s, true
}

// csrf is derived from the session id, so it needs no server-side store
// and changes with every new session (sign-in issues a new id).
func (a *auth) csrf(s session) string { return a.mac("csrf", s.ID) }

func (a *auth) csrfOK(s session, given string) bool {
	return given != "" && hmac.Equal([]byte(a.csrf(s)), []byte(given))
}

func (a *auth) setCookie(c echo.Context, s session) {
	c.SetCookie(&http.Cookie{
		Name:     sessionCookie,
		Value:    a.encode(s),
		Path:     "/",
		Expires:  s.Expires,
		HttpOnly: true,
		Secure:   c.Request().TLS != nil,
		SameSite: http.SameSiteStrictMode,
	})
}

// sessionMiddleware attaches the visitor's session, starting an anonymous
// one when the cookie is missing, forged or expired, and the token the
// request holds: the session's, or that of an Authorization header. A
// header with a wrong token is refused outright (401), and every attempt
// goes through the throttle (429 past it).
func (a *auth) sessionMiddleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if h := c.Request().Header.Get(echo.HeaderAuthorization); h != "" {
			name, secret, ok := parseAuthorization(h)
			if !ok {
				return echo.NewHTTPError(http.StatusUnauthorized, `send "Authorization: Bearer <token>" (or Basic with the token's name as the user)`)
			}
			t, err := a.attempt(c.RealIP(), name, secret)
			if te, ok := errors.AsType[*throttledError](err); ok {
				return tooMany(c, te)
			}
			if err != nil {
				return echo.NewHTTPError(http.StatusUnauthorized, "the bearer token is not one of this dashboard's tokens")
			}
			c.Set(ctxBearer, t)
		}
		var s session
		ok := false
		if ck, err := c.Cookie(sessionCookie); err == nil {
			s, ok = a.decode(ck.Value)
		}
		// A signed-in cookie the process no longer holds (signed out,
		// idle too long, or from before a restart) starts over as a
		// visitor, told once why.
		if ok && s.authed() && !a.alive(s, c.Request().Header.Get("X-Live-Refresh") == "") {
			ok = false
			c.Set(ctxEnded, true)
		}
		if !ok {
			ns, err := a.newSession("")
			if err != nil {
				return err
			}
			s = ns
			a.setCookie(c, s)
		}
		c.Set(ctxSession, s)
		return next(c)
	}
}

// parseAuthorization reads "Bearer <secret>" (a secret naming no token)
// or "Basic base64(name:secret)".
func parseAuthorization(h string) (name, secret string, ok bool) {
	scheme, rest, _ := strings.Cut(h, " ")
	rest = strings.TrimSpace(rest)
	switch {
	case strings.EqualFold(scheme, "Bearer"):
		return "", rest, rest != ""
	case strings.EqualFold(scheme, "Basic"):
		raw, err := base64.StdEncoding.DecodeString(rest)
		if err != nil {
			return "", "", false
		}
		name, secret, ok = strings.Cut(string(raw), ":")
		return name, secret, ok && name != "" && secret != ""
	}
	return "", "", false
}

func sessionOf(c echo.Context) session {
	s, _ := c.Get(ctxSession).(session)
	return s
}

// bearerOf is the token an Authorization header holds, nil when none.
func bearerOf(c echo.Context) *Token {
	t, _ := c.Get(ctxBearer).(*Token)
	return t
}

// tokenOf is the token the request holds, by header or by session; nil
// for a visitor who holds none.
func (a *auth) tokenOf(c echo.Context) *Token {
	if t := bearerOf(c); t != nil {
		return t
	}
	if s := sessionOf(c); s.authed() {
		if t, ok := a.named(s.Token); ok {
			return t
		}
	}
	return nil
}

// mayAct reports whether the request may mutate (before the CSRF check).
func (a *auth) mayAct(c echo.Context) bool {
	t := a.tokenOf(c)
	return t != nil && t.Access == ReadWrite
}

// requireWrite guards every mutating route: the caller must hold a
// read-write token (bearer header or signed-in session), and a
// session-authenticated request must carry the session's CSRF token. A
// bearer request needs no CSRF token: a browser never attaches that
// header on its own.
func (a *auth) requireWrite(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if !a.writable() {
			return echo.NewHTTPError(http.StatusForbidden, readOnlyReason)
		}
		if t := bearerOf(c); t != nil {
			if t.Access != ReadWrite {
				return echo.NewHTTPError(http.StatusForbidden, "token "+strconv.Quote(t.Name)+" is read-only; requeue, purge, changes of limits and lifecycle controls need a read-write token")
			}
			return next(c)
		}
		s := sessionOf(c)
		t := a.tokenOf(c)
		if t == nil {
			return echo.NewHTTPError(http.StatusUnauthorized, "sign in with a dashboard token first")
		}
		if !a.csrfOK(s, csrfToken(c)) {
			return echo.NewHTTPError(http.StatusForbidden, "missing or wrong CSRF token; reload the page and try again")
		}
		if t.Access != ReadWrite {
			return echo.NewHTTPError(http.StatusForbidden, "token "+strconv.Quote(t.Name)+" is read-only; requeue, purge, changes of limits and lifecycle controls need a read-write token")
		}
		return next(c)
	}
}

// csrfToken reads the token from the header (scripts) or the form field.
// The form is parsed only for form posts so a JSON body stays unread.
func csrfToken(c echo.Context) string {
	if v := c.Request().Header.Get(csrfHeader); v != "" {
		return v
	}
	ct := c.Request().Header.Get(echo.HeaderContentType)
	if strings.HasPrefix(ct, echo.MIMEApplicationForm) || strings.HasPrefix(ct, echo.MIMEMultipartForm) {
		return c.FormValue(csrfField)
	}
	return ""
}

const readOnlyReason = "read-only: the dashboard was started without a read-write token (ADK_DASHBOARD_TOKEN or ADK_DASHBOARD_TOKENS), so requeue, purge, changes of limits and lifecycle controls are off"

// flashCookie carries the result of an action to the page the action
// redirects to. It is signed and bound to the session, so a link cannot
// make the page announce an action that never happened.
const flashCookie = "adk_flash"

// flash is an action's outcome as the next page reports it.
type flash struct {
	Action string
	Count  int
	// Expected is the count the person confirmed, or -1 when the action
	// had no confirmation step.
	Expected int
}

func (a *auth) setFlash(c echo.Context, f flash) {
	s := sessionOf(c)
	n, e := strconv.Itoa(f.Count), strconv.Itoa(f.Expected)
	c.SetCookie(&http.Cookie{
		Name:     flashCookie,
		Value:    f.Action + "." + n + "." + e + "." + a.mac("flash", s.ID, f.Action, n, e),
		Path:     "/",
		MaxAge:   60,
		HttpOnly: true,
		Secure:   c.Request().TLS != nil,
		SameSite: http.SameSiteStrictMode,
	})
}

// readFlash returns the request's flash when it is genuine and this
// session's.
func (a *auth) readFlash(c echo.Context) (flash, bool) {
	ck, err := c.Cookie(flashCookie)
	if err != nil {
		return flash{}, false
	}
	parts := strings.Split(ck.Value, ".")
	if len(parts) != 4 {
		return flash{}, false
	}
	want := a.mac("flash", sessionOf(c).ID, parts[0], parts[1], parts[2])
	if !hmac.Equal([]byte(want), []byte(parts[3])) {
		return flash{}, false
	}
	n, err1 := strconv.Atoi(parts[1])
	e, err2 := strconv.Atoi(parts[2])
	if err1 != nil || err2 != nil {
		return flash{}, false
	}
	return flash{Action: parts[0], Count: n, Expected: e}, true
}

// clearFlash drops the flash once a page has shown it, so a reload does
// not announce the action twice.
func clearFlash(c echo.Context) {
	if _, err := c.Cookie(flashCookie); err != nil {
		return
	}
	c.SetCookie(&http.Cookie{Name: flashCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
}
