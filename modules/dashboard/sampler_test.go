package dashboard

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/contract/memstore"
)

func TestSamplerRingKeepsTheNewest(t *testing.T) {
	clock := contracttest.NewFakeClock(time.Time{})
	store := memstore.New(clock, memstore.Settings{})
	if err := store.Enqueue(context.Background(), contract.Item{Tenant: "a", ID: "1"}); err != nil {
		t.Fatal(err)
	}
	s := newSampler(store, clock, time.Hour, 3, time.Hour, 2, nil)
	if _, ok := s.latest(); ok {
		t.Fatal("latest before any sample")
	}
	var want []time.Time
	for range 5 {
		want = append(want, clock.Now())
		s.sample(context.Background())
		clock.Advance(time.Second)
	}
	hist := s.historyAll()
	if len(hist) != 3 {
		t.Fatalf("held %d snapshots, want 3", len(hist))
	}
	for i, snap := range hist {
		if !snap.At.Equal(want[2+i]) {
			t.Errorf("snapshot %d at %v, want %v", i, snap.At, want[2+i])
		}
		q := snap.Queues["default"]
		if ts, ok := q.tenant("a"); q.Ready != 1 || !ok || ts.Depth != 1 {
			t.Errorf("snapshot %d: %+v", i, q)
		}
	}
	if last, _ := s.latest(); !last.At.Equal(want[4]) {
		t.Errorf("latest at %v", last.At)
	}
}

// The long history keeps one snapshot per HistoryEvery in a ring of its
// own, and a span longer than the recent ring reaches for it.
func TestSamplerLongHistory(t *testing.T) {
	clock := contracttest.NewFakeClock(time.Time{})
	store := memstore.New(clock, memstore.Settings{})
	s := newSampler(store, clock, 5*time.Second, 3, time.Minute, 4, nil)
	start := clock.Now()
	for range 100 { // 8m20s of samples
		s.sample(context.Background())
		clock.Advance(5 * time.Second)
	}
	if n := len(s.historyAll()); n != 3 {
		t.Errorf("recent ring holds %d, want 3", n)
	}
	// The last sample was at 8m15s: the long ring holds 5m, 6m, 7m and
	// 8m, the recent one 8m05s, 8m10s, 8m15s.
	long := s.window(6 * time.Hour)
	var got []string
	for _, snap := range long {
		got = append(got, snap.At.Sub(start).String())
	}
	if want := "5m0s 6m0s 7m0s 8m0s 8m5s 8m10s 8m15s"; strings.Join(got, " ") != want {
		t.Errorf("a 6h span draws %v, want %s", got, want)
	}
	if short := s.window(10 * time.Second); len(short) != 2 {
		t.Errorf("a 10s span gives %d recent snapshots, want 2", len(short))
	}
	// However long the history, a chart draws at most maxChartSnapshots.
	many := newSampler(store, clock, time.Second, 600, time.Second, 600, nil)
	for range 1000 {
		many.sample(context.Background())
		clock.Advance(time.Second)
	}
	if w := many.window(24 * time.Hour); len(w) != maxChartSnapshots {
		t.Errorf("a full history draws %d snapshots, want %d", len(w), maxChartSnapshots)
	}
}

// manyInspector reports more queues and tenants than the sampler keeps.
type manyInspector struct {
	contract.Inspector
	clock *contracttest.FakeClock
	round int64
}

func (m *manyInspector) Queues(context.Context) ([]string, error) {
	var qs []string
	for i := range 40 {
		qs = append(qs, fmt.Sprintf("q%02d", i))
	}
	return qs, nil
}

func (m *manyInspector) Tenants(_ context.Context, q string) ([]contract.TenantStats, error) {
	m.round++
	var out []contract.TenantStats
	for i := range 200 {
		st := contract.TenantStats{Tenant: fmt.Sprintf("%s-t%03d", q, i), Ready: int64(i % 7), Served: m.round * int64(i%5)}
		switch i {
		case 150:
			st.Ready = 10_000 // the deepest
		case 151:
			st.Served = m.round * 1_000 // the busiest
		case 152:
			st.OldestReady = m.clock.Now().Add(-time.Hour) // the longest waiting
		case 153:
			st.Dead = 500
		}
		out = append(out, st)
	}
	return out, nil
}

// However many queues and tenants a backing holds, a snapshot keeps a
// bounded number, and the tenants it keeps are the ones each chart needs.
func TestSamplerMemoryBounded(t *testing.T) {
	clock := contracttest.NewFakeClock(time.Time{})
	insp := &manyInspector{clock: clock}
	s := newSampler(insp, clock, time.Second, 10, time.Minute, 10, nil)
	for range 50 {
		s.sample(context.Background())
		clock.Advance(time.Second)
	}
	snap, _ := s.latest()
	if len(snap.Queues) != maxSampledQueues {
		t.Errorf("snapshot holds %d queues, want %d", len(snap.Queues), maxSampledQueues)
	}
	withTenants := 0
	for q, qs := range snap.Queues {
		if len(qs.Tenants) > maxTenantSeries {
			t.Errorf("%s keeps %d tenants, want at most %d", q, len(qs.Tenants), maxTenantSeries)
		}
		if len(qs.Tenants) == 0 {
			continue
		}
		withTenants++
		for _, i := range []int{150, 151, 152, 153} {
			if _, ok := qs.tenant(fmt.Sprintf("%s-t%03d", q, i)); !ok {
				t.Errorf("%s does not keep tenant %d, the top of one chart", q, i)
			}
		}
	}
	if withTenants != maxTenantQueues {
		t.Errorf("%d queues keep tenant series, want %d", withTenants, maxTenantQueues)
	}
	if len(s.recent.buf) != 10 || len(s.history.buf) != 10 || len(s.served) > maxSampledQueues {
		t.Errorf("rings grew: %d and %d, served of %d queues", len(s.recent.buf), len(s.history.buf), len(s.served))
	}
}

type brokenInspector struct{ contract.Inspector }

func (brokenInspector) Queues(context.Context) ([]string, error) {
	return nil, errors.New("server gone")
}

func TestSamplerKeepsHistoryOnError(t *testing.T) {
	clock := contracttest.NewFakeClock(time.Time{})
	store := memstore.New(clock, memstore.Settings{})
	s := newSampler(store, clock, time.Hour, 4, time.Hour, 2, nil)
	s.sample(context.Background())
	s.insp = brokenInspector{store}
	s.sample(context.Background())
	if at, err := s.status(); err == nil || at.IsZero() {
		t.Errorf("status %v %v", at, err)
	}
	if len(s.historyAll()) != 1 {
		t.Error("a failed sample dropped or added history")
	}
}

// The sampler's goroutine starts with New and is gone after Close
// (goleak in TestMain checks the rest of the package too).
func TestSamplerStopsOnClose(t *testing.T) {
	store := memstore.New(nil, memstore.Settings{})
	srv, err := New(Config{Queue: store, Inspector: store, SampleEvery: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(srv.sampler.historyAll()) < 3 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := len(srv.sampler.historyAll()); n < 3 {
		t.Errorf("%d samples after waiting", n)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestRates(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	hist := []snapshot{
		{At: t0, Queues: map[string]queueSample{"q": {Ready: 10, Dead: 0, Served: 100}}},
		{At: t0.Add(2 * time.Second), Queues: map[string]queueSample{"q": {Ready: 6, Dead: 2, Served: 120}}},
	}
	claims, dead := rates(hist, "q")
	if claims != 10 || dead != 0.25 {
		t.Errorf("rates: %v claims/s, dead ratio %v", claims, dead)
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
