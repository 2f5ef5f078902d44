package dashboard

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/contract/memstore"
)

func TestSamplerRingKeepsTheNewest(t *testing.T) {
	clock := contracttest.NewFakeClock(time.Time{})
	store := memstore.New(clock)
	if err := store.Enqueue(context.Background(), contract.Item{Tenant: "a", ID: "1"}); err != nil {
		t.Fatal(err)
	}
	s := newSampler(store, clock, time.Hour, 3)
	if _, ok := s.latest(); ok {
		t.Fatal("latest before any sample")
	}
	var want []time.Time
	for range 5 {
		want = append(want, clock.Now())
		s.sample(context.Background())
		clock.Advance(time.Second)
	}
	hist := s.history()
	if len(hist) != 3 {
		t.Fatalf("held %d snapshots, want 3", len(hist))
	}
	for i, snap := range hist {
		if !snap.At.Equal(want[2+i]) {
			t.Errorf("snapshot %d at %v, want %v", i, snap.At, want[2+i])
		}
		if snap.Queues["default"].Ready != 1 || snap.Queues["default"].Depth["a"] != 1 {
			t.Errorf("snapshot %d: %+v", i, snap.Queues["default"])
		}
	}
	if last, _ := s.latest(); !last.At.Equal(want[4]) {
		t.Errorf("latest at %v", last.At)
	}
}

type brokenInspector struct{ contract.Inspector }

func (brokenInspector) Queues(context.Context) ([]string, error) {
	return nil, errors.New("server gone")
}

func TestSamplerKeepsHistoryOnError(t *testing.T) {
	clock := contracttest.NewFakeClock(time.Time{})
	store := memstore.New(clock)
	s := newSampler(store, clock, time.Hour, 4)
	s.sample(context.Background())
	s.insp = brokenInspector{store}
	s.sample(context.Background())
	if at, err := s.status(); err == nil || at.IsZero() {
		t.Errorf("status %v %v", at, err)
	}
	if len(s.history()) != 1 {
		t.Error("a failed sample dropped or added history")
	}
}

// The sampler's goroutine starts with New and is gone after Close
// (goleak in TestMain checks the rest of the package too).
func TestSamplerStopsOnClose(t *testing.T) {
	store := memstore.New(nil)
	srv, err := New(Config{Queue: store, Inspector: store, SampleEvery: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(srv.sampler.history()) < 3 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := len(srv.sampler.history()); n < 3 {
		t.Errorf("%d samples after waiting", n)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestRatesAndCharts(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	hist := []snapshot{
		{At: t0, Queues: map[string]queueSample{"q": {Ready: 10, Dead: 0, Served: 100, Depth: map[string]int64{"a": 8, "b": 2}}}},
		{At: t0.Add(2 * time.Second), Queues: map[string]queueSample{"q": {Ready: 6, Dead: 2, Served: 120, Depth: map[string]int64{"a": 5, "b": 1}}}},
	}
	claims, dead := rates(hist, "q")
	if claims != 10 || dead != 0.25 {
		t.Errorf("rates: %v claims/s, dead ratio %v", claims, dead)
	}
	cs := charts(hist, "q")
	if len(cs) != 3 || cs[0].Empty || len(cs[0].Series) != 2 || cs[0].Series[0].Name != "a" {
		t.Fatalf("depth chart: %+v", cs[0])
	}
	if !cs[1].Empty { // one rate point is not a line
		t.Errorf("claims chart from one interval: %+v", cs[1])
	}
	if pts := strings.Fields(cs[2].Series[0].Points); len(pts) != 2 || pts[0] != "0.0,78.0" || pts[1] != "300.0,2.0" {
		t.Errorf("dead ratio points %q", cs[2].Series[0].Points)
	}
	if c := charts(nil, "q"); !c[0].Empty || !c[1].Empty || !c[2].Empty {
		t.Error("charts without history should say they are collecting")
	}
}

func TestPreview(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{`{"a":1}`, `{"a":1}`},
		{"\xff\x00", "0xff00…"},
		{strings.Repeat("é", 100), strings.Repeat("é", 80) + "…"},
		{"line\nbreak", "line\nbreak"},
		{"bell\a", "0x62656c6c07…"},
	} {
		if got := preview([]byte(tc.in)); got != tc.want {
			t.Errorf("preview(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestScrub(t *testing.T) {
	for _, tc := range []struct{ dsn, text string }{
		{"postgres://u:pw123@h/db", "failed: postgres://u:pw123@h/db refused"},
		{"postgres://u:pw123@h/db", "auth failed for pw123"},
		{"host=h user=u password=pw123 dbname=d", "bad password=pw123"},
		{"redis://:pw123@h:6379/0", "NOAUTH pw123"},
	} {
		if got := scrub(tc.text, contract.Secret(tc.dsn)); strings.Contains(got, "pw123") {
			t.Errorf("scrub(%q) = %q", tc.text, got)
		}
	}
	if got := scrub("plain", ""); got != "plain" {
		t.Errorf("no DSN: %q", got)
	}
}
