package dashboard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"

	"github.com/labstack/echo/v4"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/dashboard/internal/view"
)

// retryAfterSeconds is what a 503 tells clients to wait: about one
// backing retry budget.
const retryAfterSeconds = "5"

// classify maps an error to the status and the message a person or a
// script should see, and logs the failures that are the backing's or the
// dashboard's own.
func (s *Server) classify(err error, c echo.Context) (int, string) {
	code, msg := statusOf(err)
	switch code {
	case http.StatusServiceUnavailable:
		s.cfg.Logger.Warn("dashboard backing unavailable", "path", c.Path(), "err", scrub(err.Error(), s.cfg.DSN))
	case http.StatusInternalServerError:
		s.cfg.Logger.Error("dashboard request failed", "path", c.Path(), "err", scrub(err.Error(), s.cfg.DSN))
	}
	return code, msg
}

// statusOf maps an error to its status and message, and nothing else.
func statusOf(err error) (int, string) {
	var he *echo.HTTPError
	var se *ScopeError
	switch {
	case errors.As(err, &he):
		return he.Code, fmt.Sprint(he.Message)
	case errors.As(err, &se):
		return http.StatusForbidden, se.Error()
	case errors.Is(err, contract.ErrInvalid):
		return http.StatusBadRequest, err.Error()
	case tooLarge(err):
		return http.StatusRequestEntityTooLarge, err.Error()
	case errors.Is(err, contract.ErrNotWaiting):
		return http.StatusConflict, err.Error()
	case errors.Is(err, contract.ErrNotFound):
		return http.StatusNotFound, err.Error()
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout, "the backing did not answer in time"
	case unavailable(err):
		return http.StatusServiceUnavailable, "the backing is unavailable; the page will work again once it answers: " + err.Error()
	}
	return http.StatusInternalServerError, err.Error()
}

// tooLarge reports whether err refuses a value over the backing's size
// limit (a signal's payload, say): the request's fault, not the backing's.
func tooLarge(err error) bool {
	spe, ok := errors.AsType[*contract.StatePersistenceError](err)
	return ok && spe.Reason == contract.ReasonTooLarge
}

// unavailable reports whether err means the backing cannot be reached
// right now (a retryable error, a dropped or refused connection), which
// is the server being away rather than the dashboard being wrong.
func unavailable(err error) bool {
	var r interface{ Retryable() bool }
	if errors.As(err, &r) && r.Retryable() {
		return true
	}
	var pe *contract.PoolExhaustedError
	var ne net.Error
	return errors.As(err, &pe) || errors.As(err, &ne) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// handleError answers JSON under /api/ and a page elsewhere, with the
// message scrubbed of the DSN and its password.
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	code, msg := s.classify(err, c)
	msg = scrub(msg, s.cfg.DSN)
	if code == http.StatusServiceUnavailable {
		c.Response().Header().Set("Retry-After", retryAfterSeconds)
	}
	if strings.HasPrefix(c.Request().URL.Path, "/api/") || c.Request().Method == http.MethodHead {
		_ = c.JSON(code, map[string]string{"error": msg})
		return
	}
	p := view.ErrorPage{Chrome: s.chrome(c, http.StatusText(code), "", ""), Code: code, Message: msg}
	// An error page never refreshes itself: the refresh would fetch the
	// failed URL again, and after a failed POST that is a GET of an
	// action's address.
	p.Chrome.Refresh = 0
	if code == http.StatusUnauthorized {
		p.Message += " (sign in at /login)"
	}
	if rerr := s.render(c, code, view.ErrorView(p)); rerr != nil {
		_ = c.String(code, msg)
	}
}

// scrub removes a DSN, and the password inside it, from text that is
// about to be shown.
func scrub(text string, dsn contract.Secret) string {
	if !dsn.IsSet() {
		return text
	}
	raw := dsn.Reveal()
	text = strings.ReplaceAll(text, raw, "[redacted]")
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok && pw != "" {
			text = strings.ReplaceAll(text, pw, "[redacted]")
		}
	}
	for _, field := range strings.Fields(raw) { // key=value DSNs
		if k, v, ok := strings.Cut(field, "="); ok && strings.EqualFold(k, "password") && v != "" {
			text = strings.ReplaceAll(text, v, "[redacted]")
		}
	}
	return text
}
