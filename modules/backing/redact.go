package backing

import (
	"net/url"
	"strings"

	"github.com/adkit/adk/modules/contract"
)

// hostOf names the server of a URL-style DSN without its credentials.
func hostOf(dsn contract.Secret) string {
	u, err := url.Parse(dsn.Reveal())
	if err != nil || u.Host == "" {
		return "the configured server"
	}
	return u.Host
}

// Redact removes the DSN and its password from text — a driver's message,
// a health value, a worker's error — for URL DSNs
// (postgres://u:pw@host) and keyword/value ones (password=pw) alike.
func Redact(text string, dsn contract.Secret) string {
	raw := dsn.Reveal()
	if raw == "" {
		return text
	}
	text = strings.ReplaceAll(text, raw, "[redacted]")
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok && pw != "" {
			text = strings.ReplaceAll(text, pw, "[redacted]")
		}
	}
	for _, field := range strings.Fields(raw) {
		if k, v, ok := strings.Cut(field, "="); ok && strings.EqualFold(k, "password") && v != "" {
			text = strings.ReplaceAll(text, strings.Trim(v, "'"), "[redacted]")
		}
	}
	return text
}

// scrubbed returns err itself when its text holds nothing of the DSN, and
// otherwise an error with the redacted text that still unwraps to err, so
// errors.As finds the typed refusal either way.
func scrubbed(err error, dsn contract.Secret) error {
	msg := err.Error()
	if clean := Redact(msg, dsn); clean != msg {
		return &redactedError{msg: clean, err: err}
	}
	return err
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
