package dashboard

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
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
)

// session is what the signed cookie carries. Every visitor gets one, signed
// in or not, so that even the sign-in form is CSRF-protected.
type session struct {
	ID      string
	Authed  bool
	Expires time.Time
}

// auth signs sessions and checks tokens. The signing key is random per
// process: restarting the dashboard signs everyone out, and no key is
// ever stored.
type auth struct {
	token contract.Secret
	key   []byte
	ttl   time.Duration
	clock contract.Clock

	// Failed sign-ins are counted per minute, all callers together: past
	// maxFailures the form answers 429 until the minute is over, which
	// caps guessing at a rate no token of reasonable length fears.
	mu       sync.Mutex
	window   time.Time
	failures int
}

const maxFailures = 10

// allowAttempt reports whether a sign-in may be tried now.
func (a *auth) allowAttempt() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.clock.Now()
	if now.Sub(a.window) >= time.Minute {
		a.window, a.failures = now, 0
	}
	return a.failures < maxFailures
}

func (a *auth) failed() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.failures++
}

func newAuth(token contract.Secret, ttl time.Duration, clock contract.Clock) (*auth, error) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	return &auth{token: token, key: key, ttl: ttl, clock: clock}, nil
}

func (a *auth) enabled() bool { return a.token.IsSet() }

// tokenOK compares in constant time; hashing first makes the comparison
// independent of the given token's length too.
func (a *auth) tokenOK(given string) bool {
	if !a.enabled() || given == "" {
		return false
	}
	x := sha256.Sum256([]byte(given))
	y := sha256.Sum256([]byte(a.token.Reveal()))
	return subtle.ConstantTimeCompare(x[:], y[:]) == 1
}

func (a *auth) mac(parts ...string) string {
	m := hmac.New(sha256.New, a.key)
	for _, p := range parts {
		m.Write([]byte(p))
		m.Write([]byte{0})
	}
	return hex.EncodeToString(m.Sum(nil))
}

func (a *auth) newSession(authed bool) (session, error) {
	id := make([]byte, 16)
	if _, err := rand.Read(id); err != nil {
		return session{}, err
	}
	return session{ID: hex.EncodeToString(id), Authed: authed && a.enabled(), Expires: a.clock.Now().Add(a.ttl)}, nil
}

func (a *auth) encode(s session) string {
	flag := "0"
	if s.Authed {
		flag = "1"
	}
	exp := strconv.FormatInt(s.Expires.Unix(), 10)
	return s.ID + "." + flag + "." + exp + "." + a.mac("session", s.ID, flag, exp)
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
	s := session{ID: parts[0], Authed: parts[1] == "1" && a.enabled(), Expires: time.Unix(exp, 0)}
	if !a.clock.Now().Before(s.Expires) {
		return session{}, false
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
// one when the cookie is missing, forged or expired, and notes a valid
// bearer token. A bearer header with a wrong token is refused outright.
func (a *auth) sessionMiddleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if h := c.Request().Header.Get(echo.HeaderAuthorization); h != "" {
			scheme, tok, _ := strings.Cut(h, " ")
			if !strings.EqualFold(scheme, "Bearer") || !a.tokenOK(strings.TrimSpace(tok)) {
				return echo.NewHTTPError(http.StatusUnauthorized, "the bearer token is not this dashboard's token")
			}
			c.Set(ctxBearer, true)
		}
		var s session
		ok := false
		if ck, err := c.Cookie(sessionCookie); err == nil {
			s, ok = a.decode(ck.Value)
		}
		if !ok {
			ns, err := a.newSession(false)
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

func sessionOf(c echo.Context) session {
	s, _ := c.Get(ctxSession).(session)
	return s
}

func bearerOf(c echo.Context) bool {
	b, _ := c.Get(ctxBearer).(bool)
	return b
}

// mayAct reports whether the request may mutate (before the CSRF check).
func (a *auth) mayAct(c echo.Context) bool {
	return a.enabled() && (bearerOf(c) || sessionOf(c).Authed)
}

// requireWrite guards every mutating route: a token must be configured,
// the caller must hold it (bearer header or signed-in session), and a
// session-authenticated request must carry the session's CSRF token. A
// bearer request needs no CSRF token: a browser never attaches that
// header on its own.
func (a *auth) requireWrite(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if !a.enabled() {
			return echo.NewHTTPError(http.StatusForbidden, readOnlyReason)
		}
		if bearerOf(c) {
			return next(c)
		}
		s := sessionOf(c)
		if !s.Authed {
			return echo.NewHTTPError(http.StatusUnauthorized, "sign in with the dashboard token first")
		}
		if !a.csrfOK(s, csrfToken(c)) {
			return echo.NewHTTPError(http.StatusForbidden, "missing or wrong CSRF token; reload the page and try again")
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

const readOnlyReason = "read-only: the dashboard was started without ADK_DASHBOARD_TOKEN, so requeue and purge are off"

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
