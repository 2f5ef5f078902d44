package dashboard

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"strings"
	"unicode"

	"github.com/adkit/adk/modules/contract"
)

// Access is what a token may do.
type Access string

// The two kinds of access.
const (
	// ReadOnly sees the pages and their /api/ twins within the token's
	// scope, and acts on nothing.
	ReadOnly Access = "read-only"
	// ReadWrite also requeues and purges within the scope, and sees the
	// audit trail.
	ReadWrite Access = "read-write"
)

// MinTokenLength is the shortest secret a token may have.
const MinTokenLength = 32

// generateAdvice is how every weak-token refusal ends.
const generateAdvice = "generate one with `openssl rand -hex 32` (64 hex characters) or `head -c 32 /dev/urandom | base64`"

// Token is one named credential and what it may see and do. A token
// with no Tenants sees every tenant, one with no Queues every queue;
// otherwise it sees only the tenants (and queues) it lists, on every
// page, /api/ twin, chart and count.
type Token struct {
	// Name identifies the token in the audit trail and the logs; it is
	// not secret. Letters, digits, '.', '_' and '-', at most 64.
	Name string
	// Secret is what a person types at /login or a script sends as
	// "Authorization: Bearer <secret>". At least MinTokenLength
	// characters of more than one kind (see CheckSecret).
	Secret contract.Secret
	// Access is ReadOnly or ReadWrite ("" means ReadOnly).
	Access Access
	// Tenants and Queues bound what the token sees and acts on.
	Tenants []string
	Queues  []string
}

// AllTenants reports whether the token sees every tenant of every queue.
func (t Token) AllTenants() bool { return len(t.Tenants) == 0 && len(t.Queues) == 0 }

// WeakTokenError refuses a secret too easy to guess. It never quotes the
// secret.
type WeakTokenError struct {
	Name    string // the token's name
	Problem string
}

func (e *WeakTokenError) Error() string {
	return fmt.Sprintf("dashboard: token %q is too weak: %s; %s", e.Name, e.Problem, generateAdvice)
}

// Is makes a WeakTokenError match contract.ErrInvalid.
func (e *WeakTokenError) Is(target error) bool { return target == contract.ErrInvalid }

// CheckSecret refuses a weak secret: shorter than MinTokenLength
// characters, all of one kind (only lower-case letters, only digits...),
// or of fewer than 8 distinct characters. The error names the token,
// never the secret.
func CheckSecret(name string, s contract.Secret) error {
	v := s.Reveal()
	n := len([]rune(v))
	if n < MinTokenLength {
		return &WeakTokenError{Name: name, Problem: fmt.Sprintf("it is %d characters long, and a token needs at least %d", n, MinTokenLength)}
	}
	classes := map[string]bool{}
	distinct := map[rune]bool{}
	for _, r := range v {
		distinct[r] = true
		switch {
		case unicode.IsLower(r):
			classes["lower"] = true
		case unicode.IsUpper(r):
			classes["upper"] = true
		case unicode.IsDigit(r):
			classes["digit"] = true
		case unicode.IsSpace(r) || unicode.IsControl(r):
			return &WeakTokenError{Name: name, Problem: "it contains a space or a control character (a pasted line end?)"}
		default:
			classes["other"] = true
		}
	}
	if len(classes) < 2 {
		return &WeakTokenError{Name: name, Problem: "every character is of one kind (only letters of one case, or only digits, or only symbols)"}
	}
	if len(distinct) < 8 {
		return &WeakTokenError{Name: name, Problem: fmt.Sprintf("it repeats %d distinct characters", len(distinct))}
	}
	return nil
}

func validTokenName(name string) error {
	if name == "" || len(name) > 64 {
		return &contract.ValidationError{Field: "token name", Problem: fmt.Sprintf("is %q; give 1 to 64 letters, digits, '.', '_' or '-'", name)}
	}
	for _, r := range name {
		if !(r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '.' || r == '_' || r == '-')) {
			return &contract.ValidationError{Field: "token name", Problem: fmt.Sprintf("is %q; use only letters, digits, '.', '_' or '-'", name)}
		}
	}
	return nil
}

// ValidateTokens checks every token and that names and secrets are
// unique; the first problem is returned, naming the token but never
// quoting a secret.
func ValidateTokens(tokens []Token) error {
	names := map[string]bool{}
	secrets := map[string]string{}
	for i, t := range tokens {
		if err := validTokenName(t.Name); err != nil {
			return fmt.Errorf("dashboard: token %d: %w", i+1, err)
		}
		if names[t.Name] {
			return fmt.Errorf("dashboard: two tokens are named %q; give each its own name", t.Name)
		}
		names[t.Name] = true
		if t.Access != "" && t.Access != ReadOnly && t.Access != ReadWrite {
			return &contract.ValidationError{Field: "token " + t.Name + " access", Problem: fmt.Sprintf("is %q; give %q or %q", t.Access, ReadOnly, ReadWrite)}
		}
		if err := CheckSecret(t.Name, t.Secret); err != nil {
			return err
		}
		if other, ok := secrets[t.Secret.Reveal()]; ok {
			return fmt.Errorf("dashboard: tokens %q and %q have the same secret; give each its own", other, t.Name)
		}
		secrets[t.Secret.Reveal()] = t.Name
		for _, tn := range t.Tenants {
			if err := contract.ValidateName("token "+t.Name+" tenant", tn); err != nil {
				return err
			}
		}
		for _, q := range t.Queues {
			if err := contract.ValidateName("token "+t.Name+" queue", q); err != nil {
				return err
			}
		}
	}
	return nil
}

// ParseTokens reads token definitions, one a line:
//
//	name=ops&access=read-write&secret=<secret>
//	name=acme-ro&tenant=acme&tenant=acme-eu&queue=default&secret=<secret>
//
// Each line is name=value pairs joined by '&', values percent-encoded
// where they hold '&', ';', '%' or a line end (a '+' stays a '+', so base64
// secrets need no escaping). Keys: name and secret (required), access
// (read-only, the default, or read-write), tenant and queue (repeatable;
// none means all). Blank lines and lines starting with '#' are skipped;
// ';' also ends a definition, so one environment variable can hold
// several. Nothing is checked here beyond the syntax: New checks the
// tokens (weak secrets included).
func ParseTokens(r io.Reader) ([]Token, error) {
	var out []Token
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		for def := range strings.SplitSeq(sc.Text(), ";") {
			def = strings.TrimSpace(def)
			if def == "" || strings.HasPrefix(def, "#") {
				continue
			}
			t, err := parseToken(def)
			if err != nil {
				return nil, fmt.Errorf("dashboard: token definition on line %d: %w", line, err)
			}
			out = append(out, t)
		}
	}
	return out, sc.Err()
}

func parseToken(def string) (Token, error) {
	var t Token
	for pair := range strings.SplitSeq(def, "&") {
		k, raw, ok := strings.Cut(pair, "=")
		if !ok {
			return t, fmt.Errorf("%q is not key=value", redactPair(pair))
		}
		v, err := url.PathUnescape(raw)
		if err != nil {
			return t, fmt.Errorf("the value of %s is not percent-encoded correctly (write %% as %%25)", k)
		}
		switch k {
		case "name":
			t.Name = v
		case "secret":
			t.Secret = contract.Secret(v)
		case "access":
			t.Access = Access(v)
		case "tenant":
			t.Tenants = append(t.Tenants, v)
		case "queue":
			t.Queues = append(t.Queues, v)
		default:
			return t, fmt.Errorf("unknown key %q; use name, secret, access, tenant or queue", k)
		}
	}
	if t.Name == "" || !t.Secret.IsSet() {
		return t, errors.New("name= and secret= are both required")
	}
	if t.Access == "" {
		t.Access = ReadOnly
	}
	return t, nil
}

// redactPair shows a malformed pair without risking a secret in it: only
// what looks like a key is quoted.
func redactPair(p string) string {
	if len(p) > 12 {
		return p[:4] + "…"
	}
	return p
}

// TokensFromEnv gathers the dashboard's tokens from the environment:
// ADK_DASHBOARD_TOKENS_FILE names a file of definitions (see
// ParseTokens), ADK_DASHBOARD_TOKENS holds definitions itself, and
// ADK_DASHBOARD_TOKEN is one read-write token over every tenant, named
// "admin". Any combination may be set; New refuses the whole set if one
// token is weak or two share a name or secret.
func TokensFromEnv(getenv func(string) string) ([]Token, error) {
	var out []Token
	if path := getenv("ADK_DASHBOARD_TOKENS_FILE"); path != "" {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("dashboard: ADK_DASHBOARD_TOKENS_FILE: %w", err)
		}
		ts, err := ParseTokens(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%w (in %s)", err, path)
		}
		out = append(out, ts...)
	}
	if defs := getenv("ADK_DASHBOARD_TOKENS"); defs != "" {
		ts, err := ParseTokens(strings.NewReader(defs))
		if err != nil {
			return nil, fmt.Errorf("%w (in ADK_DASHBOARD_TOKENS)", err)
		}
		out = append(out, ts...)
	}
	if s := getenv("ADK_DASHBOARD_TOKEN"); s != "" {
		out = append(out, Token{Name: AdminTokenName, Secret: contract.Secret(s), Access: ReadWrite})
	}
	return out, nil
}

// AdminTokenName names the token Config.Token (ADK_DASHBOARD_TOKEN) gives.
const AdminTokenName = "admin"

// tokensOf is every token a Config configures, Config.Token first.
func tokensOf(c Config) []Token {
	out := make([]Token, 0, len(c.Tokens)+1)
	if c.Token.IsSet() {
		out = append(out, Token{Name: AdminTokenName, Secret: c.Token, Access: ReadWrite})
	}
	for _, t := range c.Tokens {
		t.Tenants, t.Queues = slices.Clone(t.Tenants), slices.Clone(t.Queues)
		if t.Access == "" {
			t.Access = ReadOnly
		}
		out = append(out, t)
	}
	return out
}
