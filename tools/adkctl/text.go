package main

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/adkit/adk/modules/contract"
)

// clean makes a name or message safe to print on a terminal: control
// characters (an escape sequence in a worker's error could rewrite the
// screen), bidirectional overrides (tenant "rtl\u202Eevil.exe" would read
// "rtlexe.live") and invalid UTF-8 are shown as Go escapes; everything
// else, backslashes included, is printed as it is (--json is the
// unambiguous form).
func clean(s string) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || r == '\u2028' || r == '\u2029':
			q := strconv.QuoteRuneToASCII(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// cut shortens s to at most n runes, marking the cut with "…".
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	runes := []rune(s)
	return string(runes[:n-1]) + "…"
}

// previewBytes is how much of a payload a preview shows.
const previewBytes = 64

// preview shows a payload's start: as text when it is text, as hex
// otherwise.
func preview(p []byte) string {
	if len(p) == 0 {
		return ""
	}
	head, more := p, ""
	if len(head) > previewBytes {
		head, more = head[:previewBytes], "…"
		// A rune cut at the boundary is not binary.
		for i := 0; i < utf8.UTFMax-1 && !utf8.Valid(head) && len(head) > 0; i++ {
			head = head[:len(head)-1]
		}
	}
	if utf8.Valid(head) {
		text := true
		for _, r := range string(head) {
			if !unicode.IsPrint(r) && !unicode.IsSpace(r) {
				text = false
				break
			}
		}
		if text {
			return string(head) + more
		}
	}
	return "0x" + hex.EncodeToString(p[:min(len(p), previewBytes/2)]) + more
}

// age says how long ago t was, or how long until it comes, in the
// largest two units: "12s", "3m05s", "2h07m", "4d03h".
func age(d time.Duration) string {
	d = d.Round(time.Second)
	if d < 0 {
		d = -d
	}
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd%02dh", int(d.Hours())/24, int(d.Hours())%24)
}

// ago prints a past time relative to now ("-" when zero).
func ago(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	if t.After(now) {
		return "in " + age(t.Sub(now))
	}
	return age(now.Sub(t)) + " ago"
}

// describe prints a dead-letter filter the way the flags spell it.
func describe(f contract.DeadLetterFilter) string {
	parts := []string{"--queue " + quoteIfNeeded(contract.QueueName(f.Queue))}
	if f.Tenant != "" {
		parts = append(parts, "--tenant "+quoteIfNeeded(f.Tenant))
	}
	if f.ID != "" {
		parts = append(parts, "--id "+quoteIfNeeded(f.ID))
	}
	if f.ErrorContains != "" {
		parts = append(parts, "--error "+strconv.Quote(f.ErrorContains))
	}
	return strings.Join(parts, " ")
}

// quoteIfNeeded leaves plain names bare and quotes the rest, so that the
// printed flags can be pasted back into a shell.
func quoteIfNeeded(s string) string {
	for _, r := range s {
		if !(r == '-' || r == '_' || r == '.' || r == ':' || r == '/' || r == '@' || unicode.IsLetter(r) || unicode.IsDigit(r)) || r > unicode.MaxASCII {
			return strconv.Quote(s)
		}
	}
	if s == "" {
		return `""`
	}
	return s
}

// plural picks the word for n: plural(1, "dead letter", "dead letters").
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}
