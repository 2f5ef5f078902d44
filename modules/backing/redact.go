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

// redact removes the DSN, and its password, from a driver's message:
// drivers quote what they could not parse.
func redact(msg string, dsn contract.Secret) string {
	raw := dsn.Reveal()
	if raw == "" {
		return msg
	}
	msg = strings.ReplaceAll(msg, raw, "[redacted]")
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok && pw != "" {
			msg = strings.ReplaceAll(msg, pw, "[redacted]")
		}
	}
	return msg
}

// scrubbed returns err itself when its text holds nothing of the DSN, and
// otherwise an error with the redacted text that still unwraps to err, so
// errors.As finds the typed refusal either way.
func scrubbed(err error, dsn contract.Secret) error {
	msg := err.Error()
	if clean := redact(msg, dsn); clean != msg {
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
