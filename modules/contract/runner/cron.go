package runner

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// cronSpec is a parsed five-field cron expression: one bit per allowed
// value of each field.
type cronSpec struct {
	minute, hour, dom, month, dow uint64
	// domStar and dowStar record a field written as "*" (or "?"): when
	// both day fields are restricted a day matches either, as in Vixie
	// cron; when one is "*" only the other counts.
	domStar, dowStar bool
}

// cronField describes one field's range and the names it accepts.
type cronField struct {
	name     string
	min, max int
	names    map[string]int
}

var cronFields = [5]cronField{
	{name: "minute", min: 0, max: 59},
	{name: "hour", min: 0, max: 23},
	{name: "day of month", min: 1, max: 31},
	{name: "month", min: 1, max: 12, names: map[string]int{
		"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6,
		"jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12,
	}},
	// 7 is accepted for Sunday, as most crons do, and folded onto 0.
	{name: "day of week", min: 0, max: 7, names: map[string]int{
		"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6,
	}},
}

var cronMacros = map[string]string{
	"@yearly":   "0 0 1 1 *",
	"@annually": "0 0 1 1 *",
	"@monthly":  "0 0 1 * *",
	"@weekly":   "0 0 * * 0",
	"@daily":    "0 0 * * *",
	"@midnight": "0 0 * * *",
	"@hourly":   "0 * * * *",
}

// parseCron parses "minute hour day-of-month month day-of-week" (each a
// list of values, ranges a-b and steps */n or a-b/n, months and weekdays
// also by their three-letter English names) or one of the macros
// @yearly, @monthly, @weekly, @daily, @midnight and @hourly.
func parseCron(expr string) (cronSpec, error) {
	s := strings.TrimSpace(expr)
	if m, ok := cronMacros[strings.ToLower(s)]; ok {
		s = m
	}
	parts := strings.Fields(s)
	if len(parts) != 5 {
		return cronSpec{}, fmt.Errorf("has %d fields; write five (minute hour day-of-month month day-of-week), e.g. \"*/15 * * * *\", or a macro such as @hourly", len(parts))
	}
	var bits [5]uint64
	for i, p := range parts {
		b, err := parseCronField(p, cronFields[i])
		if err != nil {
			return cronSpec{}, err
		}
		bits[i] = b
	}
	if bits[4]&(1<<7) != 0 {
		bits[4] = bits[4]&^(1<<7) | 1
	}
	spec := cronSpec{minute: bits[0], hour: bits[1], dom: bits[2], month: bits[3], dow: bits[4],
		domStar: isStar(parts[2]), dowStar: isStar(parts[4])}
	if !spec.anyDay() {
		return cronSpec{}, fmt.Errorf("never matches: no month has the day of month %q; pick days that exist", parts[2])
	}
	return spec, nil
}

func isStar(p string) bool { return p == "*" || p == "?" }

// anyDay reports whether some month of the spec has one of its days of
// the month (so "0 0 30 2 *" is refused instead of never firing). The day
// of week always matches some day, so only a restricted day of month
// with a "*" day of week can be impossible.
func (c cronSpec) anyDay() bool {
	if !c.dowStar {
		return true
	}
	longest := [13]int{0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}
	for m := 1; m <= 12; m++ {
		if c.month&(1<<m) == 0 {
			continue
		}
		for d := 1; d <= longest[m]; d++ {
			if c.dom&(1<<d) != 0 {
				return true
			}
		}
	}
	return false
}

func parseCronField(p string, f cronField) (uint64, error) {
	var bits uint64
	for _, part := range strings.Split(p, ",") {
		lo, hi, step := f.min, f.max, 1
		rng := part
		if i := strings.IndexByte(part, '/'); i >= 0 {
			n, err := strconv.Atoi(part[i+1:])
			if err != nil || n <= 0 {
				return 0, fmt.Errorf("%s field %q: the step after / must be a positive number", f.name, p)
			}
			step, rng = n, part[:i]
		}
		switch {
		case isStar(rng):
		case strings.Contains(rng, "-"):
			a, b, _ := strings.Cut(rng, "-")
			var err error
			if lo, err = cronValue(a, f); err != nil {
				return 0, err
			}
			if hi, err = cronValue(b, f); err != nil {
				return 0, err
			}
			if lo > hi {
				return 0, fmt.Errorf("%s field %q: the range %s runs backwards; write the lower value first", f.name, p, rng)
			}
		default:
			v, err := cronValue(rng, f)
			if err != nil {
				return 0, err
			}
			lo = v
			if step == 1 {
				hi = v
			}
		}
		for v := lo; v <= hi; v += step {
			bits |= 1 << v
		}
	}
	return bits, nil
}

func cronValue(s string, f cronField) (int, error) {
	if v, ok := f.names[strings.ToLower(s)]; ok {
		return v, nil
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < f.min || v > f.max {
		return 0, fmt.Errorf("%s field: %q is not a value from %d to %d", f.name, s, f.min, f.max)
	}
	return v, nil
}

func (c cronSpec) dayMatches(t time.Time) bool {
	dom := c.dom&(1<<t.Day()) != 0
	dow := c.dow&(1<<int(t.Weekday())) != 0
	switch {
	case c.domStar && c.dowStar:
		return true
	case c.domStar:
		return dow
	case c.dowStar:
		return dom
	default:
		return dom || dow
	}
}

// next returns the first instant after t whose wall-clock reading in loc
// matches the spec. A wall time the clocks skip (the spring change) does
// not occur, so it does not fire that day; one that occurs twice (the
// autumn change) fires at its first occurrence only.
func (c cronSpec) next(t time.Time, loc *time.Location) time.Time {
	t = t.In(loc).Truncate(time.Minute).Add(time.Minute)
	// Five years bound the search; every valid spec matches within one
	// leap cycle (the 29th of February, a given weekday).
	limit := t.AddDate(5, 0, 0)
	for t.Before(limit) {
		y, mo, d := t.Date()
		var n time.Time
		switch {
		case c.month&(1<<int(mo)) == 0:
			n = time.Date(y, mo+1, 1, 0, 0, 0, 0, loc)
		case !c.dayMatches(t):
			n = time.Date(y, mo, d+1, 0, 0, 0, 0, loc)
		case c.hour&(1<<t.Hour()) == 0:
			n = time.Date(y, mo, d, t.Hour()+1, 0, 0, 0, loc)
		case c.minute&(1<<t.Minute()) == 0 || repeatedWallTime(t):
			n = t.Add(time.Minute)
		default:
			return t
		}
		// A zone's transitions can make a wall-clock step land on or
		// before t; the search always moves forward.
		if !n.After(t) {
			n = t.Add(time.Minute)
		}
		t = n
	}
	return time.Time{}
}

// repeatedWallTime reports whether t's wall-clock reading already occurred
// earlier, because the clocks were turned back in the hours before it.
func repeatedWallTime(t time.Time) bool {
	_, now := t.Zone()
	_, before := t.Add(-3 * time.Hour).Zone()
	if before <= now {
		return false
	}
	earlier := t.Add(-time.Duration(before-now) * time.Second)
	h1, m1, _ := earlier.Clock()
	h2, m2, _ := t.Clock()
	return earlier.Day() == t.Day() && h1 == h2 && m1 == m2
}
