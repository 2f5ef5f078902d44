package contract

import (
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestValidateName(t *testing.T) {
	tests := []struct {
		in      string
		wantErr string
	}{
		{"acme", ""},
		{"a:b", ""},
		{"{x}", ""},
		{"日本", ""},
		{"with space", ""},
		{"", "is empty"},
		{strings.Repeat("x", MaxNameBytes), ""},
		{strings.Repeat("x", MaxNameBytes+1), "keep it to"},
		{"bad\xffutf8", "not valid UTF-8"},
		{"nul\x00byte", "NUL byte"},
	}
	for _, tt := range tests {
		err := ValidateName("Item.Tenant", tt.in)
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("ValidateName(%q) = %v, want nil", tt.in, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "Item.Tenant") || !errors.Is(err, ErrInvalid)):
			t.Errorf("ValidateName(%q) = %v, want ErrInvalid naming the field and %q", tt.in, err, tt.wantErr)
		}
	}
}

func TestValidateRun(t *testing.T) {
	ok := Run{Tenant: "t", ID: "r", Data: []byte(`{"a":1}`)}
	tests := []struct {
		name    string
		mutate  func(*Run)
		max     int
		wantErr string
	}{
		{"valid", func(*Run) {}, 100, ""},
		{"empty data is null", func(r *Run) { r.Data = nil }, 100, ""},
		{"at the limit", func(r *Run) { r.Data = []byte(`"` + strings.Repeat("x", 98) + `"`) }, 100, ""},
		{"over the limit", func(r *Run) { r.Data = []byte(`"` + strings.Repeat("x", 99) + `"`) }, 100, "too_large"},
		{"malformed json", func(r *Run) { r.Data = []byte(`{"a":`) }, 100, "Run.Data"},
		{"invalid utf8 in a string", func(r *Run) { r.Data = []byte("\"\xff\"") }, 100, "Run.Data"},
		{"empty tenant", func(r *Run) { r.Tenant = "" }, 100, "Run.Tenant"},
		{"empty id", func(r *Run) { r.ID = "" }, 100, "Run.ID"},
		{"bad session", func(r *Run) { r.Session = "a\x00" }, 100, "Run.Session"},
		{"bad status", func(r *Run) { r.Status = "\xff" }, 100, "Run.Status"},
		{"negative version", func(r *Run) { r.Version = -1 }, 100, "Run.Version"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ok
			tt.mutate(&r)
			err := ValidateRun(r, tt.max)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want one mentioning %q", err, tt.wantErr)
			}
		})
	}
}

func TestValidateItemClaimPageFilter(t *testing.T) {
	item := Item{Tenant: "t", ID: "i", Payload: []byte("12345")}
	if err := ValidateItem(item, 5); err != nil {
		t.Fatal(err)
	}
	var tooLarge *StatePersistenceError
	if err := ValidateItem(item, 4); !errors.As(err, &tooLarge) || tooLarge.Reason != ReasonTooLarge || Retryable(err) {
		t.Fatalf("oversized payload: %v", err)
	}
	bad := []error{
		ValidateItem(Item{Tenant: "t", ID: "i", Metadata: map[string]string{"": "x"}}, 5),
		ValidateItem(Item{Tenant: "t", ID: "i", Metadata: map[string]string{"k": "\x00"}}, 5),
		ValidateItems(nil, 5),
		ValidateClaim(ClaimRequest{LeaseFor: time.Second, Max: 0}),
		ValidateClaim(ClaimRequest{LeaseFor: time.Second, Max: 1_000_000}),
		ValidateClaim(ClaimRequest{LeaseFor: -time.Second, Max: 1}),
		ValidateClaim(ClaimRequest{LeaseFor: time.Second, Max: 1, Worker: "\xff"}),
		ValidateExtend(0),
		ValidateLease(Lease{}),
		ValidateFilter(DeadLetterFilter{Tenant: "\x00"}),
		ValidateFilter(DeadLetterFilter{ErrorContains: "\xff"}),
		ValidatePatch(Patch{Status: "\x00"}),
	}
	for i, err := range bad {
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("case %d: %v, want ErrInvalid", i, err)
		}
	}
	if err := ValidateClaim(ClaimRequest{LeaseFor: time.Second, Max: MaxClaimBatch}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ limit, want int }{{0, DefaultPageSize}, {7, 7}, {MaxPageSize, MaxPageSize}} {
		if got, err := ValidatePage(PageRequest{Limit: tt.limit}); err != nil || got != tt.want {
			t.Errorf("ValidatePage(%d) = %d, %v", tt.limit, got, err)
		}
	}
	for _, l := range []int{-1, MaxPageSize + 1} {
		if _, err := ValidatePage(PageRequest{Limit: l}); !errors.Is(err, ErrInvalid) {
			t.Errorf("ValidatePage(%d) = %v", l, err)
		}
	}
}

func TestFilterMatches(t *testing.T) {
	it := Item{Tenant: "acme", ID: "i1", LastError: "rate limited by upstream"}
	tests := []struct {
		f    DeadLetterFilter
		want bool
	}{
		{DeadLetterFilter{}, true},
		{DeadLetterFilter{Tenant: "acme"}, true},
		{DeadLetterFilter{Tenant: "other"}, false},
		{DeadLetterFilter{ID: "i1", ErrorContains: "rate limited"}, true},
		{DeadLetterFilter{ErrorContains: "Rate"}, true},
		{DeadLetterFilter{ErrorContains: "RATE LIMITED BY"}, true},
		{DeadLetterFilter{ErrorContains: "rate-limited"}, false},
		{DeadLetterFilter{ID: "i2"}, false},
	}
	for _, tt := range tests {
		if got := tt.f.Matches(it); got != tt.want {
			t.Errorf("%+v.Matches = %v, want %v", tt.f, got, tt.want)
		}
	}
}

func TestFoldASCII(t *testing.T) {
	for in, want := range map[string]string{"": "", "abc": "abc", "ABC xyz": "abc xyz", "Überlauf ÄÖ": "Überlauf ÄÖ", "MiXeD-123_Z": "mixed-123_z", "\xffA": "\xffa"} {
		if got := FoldASCII(in); got != want {
			t.Errorf("FoldASCII(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestContainsFoldASCII(t *testing.T) {
	for _, c := range []struct {
		s, sub string
		want   bool
	}{
		{"Timeout after 30s", "timeout", true}, {"Timeout after 30s", "AFTER 3", true}, {"x", "", true}, {"", "x", false},
		{"ab", "abc", false}, {"aab", "ab", true}, {"Überlauf", "überlauf", false}, {"Überlauf", "ÜBERLAUF", true}, {"Überlauf", "Überl", true},
	} {
		if got := ContainsFoldASCII(c.s, c.sub); got != c.want {
			t.Errorf("ContainsFoldASCII(%q, %q) = %v, want %v", c.s, c.sub, got, c.want)
		}
		if want := strings.Contains(FoldASCII(c.s), FoldASCII(c.sub)); want != c.want {
			t.Errorf("the case %q/%q disagrees with FoldASCII", c.s, c.sub)
		}
	}
}

func TestErrorGroup(t *testing.T) {
	long := strings.Repeat("é", ErrorGroupRunes+5)
	if got := ErrorGroup(long); got != strings.Repeat("é", ErrorGroupRunes) {
		t.Errorf("ErrorGroup cut %d runes to %d", ErrorGroupRunes+5, utf8.RuneCountInString(got))
	}
	if got := ErrorGroup("short"); got != "short" {
		t.Errorf("ErrorGroup(short) = %q", got)
	}
}

func TestErrorText(t *testing.T) {
	if got := ErrorText(nil); got == "" {
		t.Fatal("nil cause gives empty text")
	}
	if got := ErrorText(errors.New("a\x00b\xff")); got != "ab\uFFFD" {
		t.Fatalf("ErrorText = %q", got)
	}
	long := strings.Repeat("é", 3000) // 6000 bytes
	got := ErrorText(errors.New(long))
	if len(got) > 4<<10 || !strings.HasPrefix(long, got) {
		t.Fatalf("ErrorText cut badly: %d bytes", len(got))
	}
}

func TestCountersAddAndNames(t *testing.T) {
	c := Counters{1, 2, 3, 4, 5}.Add(Counters{10, 20, 30, 40, 50})
	if c != (Counters{11, 22, 33, 44, 55}) {
		t.Fatalf("Add = %+v", c)
	}
	if QueueName("") != DefaultQueue || QueueName("q") != "q" {
		t.Fatal("QueueName default")
	}
	l := Lease{Item: Item{Tenant: "t", ID: "i"}}
	if l.Key() != (ItemKey{"t", DefaultQueue, "i"}) {
		t.Fatalf("Key = %+v", l.Key())
	}
	h := Health{Checks: []HealthCheck{{Status: HealthOK}, {Status: HealthWarn}}}
	if h.Status() != HealthWarn {
		t.Fatal("Health.Status should be warn")
	}
	h.Checks = append(h.Checks, HealthCheck{Status: HealthFail})
	if h.Status() != HealthFail || (Health{}).Status() != HealthOK {
		t.Fatal("Health.Status should be fail / ok")
	}
}

func TestValidateCompleteAndClaim(t *testing.T) {
	good := Lease{Item: Item{Tenant: "acme", ID: "1"}, Token: 1}
	claim := ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: 10}
	for _, tc := range []struct {
		name  string
		done  []Lease
		req   ClaimRequest
		field string // "" for valid
	}{
		{"complete and claim", []Lease{good}, claim, ""},
		{"complete only", []Lease{good}, ClaimRequest{Queue: "jobs"}, ""},
		{"claim only", nil, claim, ""},
		{"bad lease", []Lease{good, {Item: Item{ID: "2"}}}, claim, "Lease.Item.Tenant"},
		{"bad queue, complete only", []Lease{good}, ClaimRequest{Queue: "a\x00b"}, "ClaimRequest.Queue"},
		{"bad claim", []Lease{good}, ClaimRequest{Worker: "w", LeaseFor: time.Minute, Max: -1}, "ClaimRequest.Max"},
	} {
		err := ValidateCompleteAndClaim(tc.done, tc.req)
		var ve *ValidationError
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.field != "" && (!errors.As(err, &ve) || ve.Field != tc.field):
			t.Errorf("%s: %v, want a ValidationError on %s", tc.name, err, tc.field)
		}
	}
}

// ValidateName reads ASCII names eight bytes at a time: a NUL or a byte
// outside ASCII is found at every position of a word and of the tail,
// and a valid name outside ASCII still passes.
func TestValidateNameEveryPosition(t *testing.T) {
	for n := 1; n <= 20; n++ {
		for i := range n {
			for _, bad := range []string{"\x00", "\xff"} {
				b := []byte(strings.Repeat("a", n))
				b[i] = bad[0]
				if err := ValidateName("f", string(b)); err == nil {
					t.Fatalf("ValidateName(%q) = nil; want an error", b)
				}
			}
			b := []byte(strings.Repeat("a", n))
			b[i] = 0x7f
			if err := ValidateName("f", string(b)); err != nil {
				t.Fatalf("ValidateName(%q) = %v; want nil", b, err)
			}
		}
	}
	for _, ok := range []string{"héllo-wörld-über", "\u00e9", strings.Repeat("a", MaxNameBytes)} {
		if err := ValidateName("f", ok); err != nil {
			t.Errorf("ValidateName(%q) = %v; want nil", ok, err)
		}
	}
	for _, bad := range []string{"", strings.Repeat("a", MaxNameBytes+1), "héllo\x00wörld", "ab\xc3"} {
		if err := ValidateName("f", bad); err == nil {
			t.Errorf("ValidateName(%q) = nil; want an error", bad)
		}
	}
}
