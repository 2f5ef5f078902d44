package runner

import (
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // the DST cases need America/New_York wherever the tests run
)

func TestCronNext(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	utc := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	cases := []struct {
		expr, after string
		loc         *time.Location
		want        []string // the next ticks, in order
	}{
		{"*/15 * * * *", "2026-12-01T09:07:30Z", time.UTC, []string{"2026-12-01T09:15:00Z", "2026-12-01T09:30:00Z", "2026-12-01T09:45:00Z", "2026-12-01T10:00:00Z"}},
		{"0 9 * * mon-fri", "2026-12-04T09:00:00Z", time.UTC, []string{"2026-12-07T09:00:00Z", "2026-12-08T09:00:00Z"}}, // Friday 09:00 itself is not after
		{"30 2 29 feb *", "2026-01-01T00:00:00Z", time.UTC, []string{"2028-02-29T02:30:00Z", "2032-02-29T02:30:00Z"}},
		{"@hourly", "2026-12-01T23:59:00Z", time.UTC, []string{"2026-12-02T00:00:00Z", "2026-12-02T01:00:00Z"}},
		{"0 0 1,15 * 0", "2026-12-01T00:00:00Z", time.UTC, []string{"2026-12-06T00:00:00Z", "2026-12-13T00:00:00Z", "2026-12-15T00:00:00Z"}}, // day of month OR Sunday
		{"0 12 * * 7", "2026-12-01T00:00:00Z", time.UTC, []string{"2026-12-06T12:00:00Z"}},                                                   // 7 is Sunday too
		{"5-10/5 1 * jan *", "2026-12-31T00:00:00Z", time.UTC, []string{"2027-01-01T01:05:00Z", "2027-01-01T01:10:00Z", "2027-01-02T01:05:00Z"}},
		// Read in New York: 09:00 EST is 14:00 UTC.
		{"0 9 * * *", "2026-12-01T00:00:00Z", ny, []string{"2026-12-01T14:00:00Z", "2026-12-02T14:00:00Z"}},
		// Spring change on 2026-03-08: 02:30 does not exist that day, so the
		// schedule fires on the 7th and the 9th.
		{"30 2 * * *", "2026-03-07T12:00:00Z", ny, []string{"2026-03-09T06:30:00Z", "2026-03-10T06:30:00Z"}},
		// Autumn change on 2026-11-01: 01:30 occurs twice and fires once (at
		// 01:30 EDT, 05:30 UTC), then the next day at 01:30 EST.
		{"30 1 * * *", "2026-10-31T12:00:00Z", ny, []string{"2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"}},
		// Every minute across the autumn change: the repeated hour is not
		// fired twice; 01:59 EDT is followed by 02:00 EST.
		{"* * * * *", "2026-11-01T05:58:00Z", ny, []string{"2026-11-01T05:59:00Z", "2026-11-01T07:00:00Z"}},
	}
	for _, c := range cases {
		spec, err := parseCron(c.expr)
		if err != nil {
			t.Fatalf("%q: %v", c.expr, err)
		}
		at := utc(c.after)
		for i, w := range c.want {
			at = spec.next(at, c.loc)
			if !at.Equal(utc(w)) {
				t.Errorf("%q in %v, tick %d after %s: got %s, want %s", c.expr, c.loc, i+1, c.after, at.UTC().Format(time.RFC3339), w)
				break
			}
		}
	}
}

func TestCronRefusesBadExpressions(t *testing.T) {
	cases := map[string]string{
		"* * * *":       "has 4 fields",
		"60 * * * *":    `"60" is not a value from 0 to 59`,
		"* 24 * * *":    `"24" is not a value from 0 to 23`,
		"* * 0 * *":     `"0" is not a value from 1 to 31`,
		"* * * 13 *":    `"13" is not a value from 1 to 12`,
		"* * * * 8":     `"8" is not a value from 0 to 7`,
		"*/0 * * * *":   "step after / must be a positive number",
		"10-5 * * * *":  "runs backwards",
		"* * * foo *":   `"foo" is not a value`,
		"0 0 30 2 *":    "never matches",
		"0 0 31 4,6 *":  "never matches",
		"@fortnightly":  "has 1 fields",
		"1,,2 * * * *":  `"" is not a value`,
		"* * * * mon-x": `"x" is not a value`,
	}
	for expr, want := range cases {
		_, err := parseCron(expr)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("parseCron(%q) = %v, want an error containing %q", expr, err, want)
		}
	}
	// A day that exists in some listed month is fine, and a restricted day
	// of week makes any day of month possible.
	for _, ok := range []string{"0 0 31 1-4 *", "0 0 30 2 mon", "0 0 29 2 *"} {
		if _, err := parseCron(ok); err != nil {
			t.Errorf("parseCron(%q): %v", ok, err)
		}
	}
}
