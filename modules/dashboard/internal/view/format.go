package view

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/a-h/templ"
)

// Num formats n with thousands separators, so 100000 reads as 100,000.
func Num[T ~int | ~int64](n T) string {
	s := strconv.FormatInt(int64(n), 10)
	neg := false
	if s[0] == '-' {
		neg, s = true, s[1:]
	}
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}

// Count formats n with its noun in the right number: "1 turn", "2 turns",
// "4,210 dead letters". The plural is the noun plus "s" unless given.
func Count[T ~int | ~int64](n T, singular string, plural ...string) string {
	if n == 1 || n == -1 {
		return Num(n) + " " + singular
	}
	if len(plural) > 0 {
		return Num(n) + " " + plural[0]
	}
	return Num(n) + " " + singular + "s"
}

// Token formats a fencing token as the plain integer it is: it is an
// identifier people compare and copy, not a quantity, so it gets no
// thousands separators.
func Token(t int64) string { return strconv.FormatInt(t, 10) }

// Label makes a name from the queue (tenant, item id, worker, error text)
// safe to show as text. Characters that would change how the text around
// them is drawn (bidi overrides and isolates, zero-width and other format
// or control characters) are shown as their code point, so
// "rtl\u202Eevil.exe" reads "rtl‹U+202E›evil.exe" instead of drawing
// "rtlexe.live". Ordinary right-to-left letters are kept; the templates
// isolate every name with <bdi> so they cannot reorder the page around it.
func Label(s string) string {
	clean := true
	for _, r := range s {
		if hidden(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if hidden(r) {
			fmt.Fprintf(&b, "‹U+%04X›", r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// hidden reports characters that draw nothing themselves but can change
// what the text around them looks like. Newlines and tabs in error text
// are ordinary layout and stay.
func hidden(r rune) bool {
	switch r {
	case '\n', '\t':
		return false
	}
	return unicode.Is(unicode.Cc, r) || unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Bidi_Control, r)
}

// Dur formats a duration for people: 850ms, 12.3s, 4m05s, 2h10m.
func Dur(d time.Duration) string {
	if d < 0 {
		d = -d
	}
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	default:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
}

// Clock formats an instant as UTC time of day, with the date when it is
// not today's.
func Clock(t, now time.Time) string {
	if t.IsZero() {
		return "—"
	}
	t, now = t.UTC(), now.UTC()
	if t.Year() == now.Year() && t.YearDay() == now.YearDay() {
		return t.Format("15:04:05")
	}
	return t.Format("2006-01-02 15:04:05")
}

// Ago formats how long before now t was.
func Ago(t, now time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return Dur(now.Sub(t)) + " ago"
}

// Pct formats a ratio as a percentage.
func Pct(r float64) string { return strconv.FormatFloat(r*100, 'f', 1, 64) + "%" }

// Rate formats a per-second rate.
func Rate(r float64) string { return strconv.FormatFloat(r, 'f', 1, 64) + "/s" }

// Link builds a same-site URL from a path and query pairs (key, value,
// key, value...), skipping empty values. Values are query-escaped here,
// and templ escapes the attribute again, so user input stays inert.
func Link(path string, kv ...string) templ.SafeURL {
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			q.Set(kv[i], kv[i+1])
		}
	}
	if len(q) == 0 {
		return templ.SafeURL(path)
	}
	return templ.SafeURL(path + "?" + q.Encode())
}

// StatusClass maps a health status to its CSS class.
func StatusClass(s string) string {
	switch s {
	case "ok":
		return "st-ok"
	case "warn":
		return "st-warn"
	default:
		return "st-fail"
	}
}

// StatusWord says what a status means, for the badge beside its colour.
func StatusWord(s string) string {
	switch s {
	case "ok":
		return "healthy"
	case "warn":
		return "needs attention"
	default:
		return "failing"
	}
}

// current marks the page a nav link points at, for screen readers.
func current(active bool) string {
	if active {
		return "page"
	}
	return "false"
}

func itoa(n int) string { return strconv.Itoa(n) }

// secs formats a number of seconds as a duration.
func secs(s float64) string {
	if s <= 0 {
		return "—"
	}
	return Dur(time.Duration(s * float64(time.Second)))
}

// boolAttr is an ARIA boolean attribute value.
func boolAttr(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// titleCase capitalises the first letter of an ASCII word.
func titleCase(s string) string {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}

func pickOf(k Picked) string { return url.Values{"t": {k.Tenant}, "i": {k.ID}}.Encode() }

// permille is a share as a whole number of thousandths, for SVG widths
// (the stylesheet policy allows no inline style).
func permille(share float64) string {
	return strconv.Itoa(int(min(max(share, 0), 1)*1000 + 0.5))
}

// deadTotalTail finishes the sentence that counts a filter's letters,
// before the queue's name.
func deadTotalTail(p Dead) string {
	if !p.Filter.Narrowed() {
		return " in "
	}
	verb := " match"
	if p.Total == 1 {
		verb = " matches"
	}
	return verb + " the filter, of " + Num(p.QueueTotal) + " in "
}

func confirmTail(p Confirm) string {
	switch {
	case p.Scope == "selection":
		return ", the ones you selected that are still dead."
	case p.Filter.Narrowed():
		return " matching the filter."
	}
	return ": every letter in the queue."
}

func errorsTail(p DeadErrors) string {
	s := " in " + Count(p.Distinct, "group") + " by error"
	if int64(len(p.Groups)) < p.Distinct {
		s += ", the largest " + itoa(len(p.Groups)) + " shown"
	}
	return s + "."
}

// f1 formats an SVG coordinate.
func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

func starvedStatus(n int) string {
	if n == 0 {
		return "ok"
	}
	return "fail"
}

func starvedText(starved, withWork int) string {
	if starved == 0 {
		return "every tenant with work got a turn"
	}
	return Count(starved, "tenant") + " of " + Num(withWork) + " got no turn"
}
