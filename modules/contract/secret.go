package contract

import "fmt"

// Secret holds a DSN, password or token. Every way of printing or
// marshalling it shows [redacted]; call Reveal to get the value.
type Secret string

const redacted = "[redacted]"

// Reveal returns the secret's value. Never log it.
func (s Secret) Reveal() string { return string(s) }

// String returns "[redacted]".
func (s Secret) String() string { return redacted }

// GoString returns "[redacted]", so %#v does not leak either.
func (s Secret) GoString() string { return redacted }

// Format prints "[redacted]" for every verb.
func (s Secret) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(redacted)) }

// MarshalText returns "[redacted]".
func (s Secret) MarshalText() ([]byte, error) { return []byte(redacted), nil }

// MarshalJSON returns "[redacted]" as a JSON string.
func (s Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + redacted + `"`), nil }

// IsSet reports whether the secret has a value.
func (s Secret) IsSet() bool { return s != "" }
