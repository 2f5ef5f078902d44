package view

import (
	"fmt"
	"net/url"
	"strconv"
	"time"

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

// StatusWord is the colour word shown beside a status.
func StatusWord(s string) string {
	switch s {
	case "ok":
		return "green"
	case "warn":
		return "amber"
	default:
		return "red"
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// secs formats a number of seconds as a duration.
func secs(s float64) string {
	if s <= 0 {
		return "—"
	}
	return Dur(time.Duration(s * float64(time.Second)))
}
