package dashboard

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/dashboard/internal/view"
)

// shardReporter is the queue's ShardReporter, when its backing has one.
func (s *Server) shardReporter() (contract.ShardReporter, bool) {
	return contract.AsShardReporter(s.cfg.Queue)
}

// shardsPanel reads queue's shards for the queue page. It is nil when
// the backing reports none or only one: a queue of one shard has nothing
// to show. A failed read is the panel's error, scrubbed, so the rest of
// the page still serves its controls.
func (s *Server) shardsPanel(c echo.Context, queue string) *view.ShardsPanel {
	r, ok := s.shardReporter()
	if !ok {
		return nil
	}
	shards, err := r.Shards(c.Request().Context(), queue)
	if err != nil {
		_, msg := s.classify(err, c)
		return &view.ShardsPanel{Error: "The shards could not be read: " + scrub(msg, s.cfg.DSN)}
	}
	if len(shards) <= 1 {
		return nil
	}
	p := s.shardsOf(c, shards)
	return &p
}

// shardsOf fills the panel from the backing's report. A shard's numbers
// sum every tenant on it, and which tenants those are is the backing's
// to know, so a token that does not see every tenant of the queue is
// told how many shards there are and nothing more.
func (s *Server) shardsOf(c echo.Context, shards []contract.ShardStats) view.ShardsPanel {
	p := view.ShardsPanel{Count: len(shards)}
	if sc := s.scopeOf(c); sc.tenants != nil {
		p.Partial = "Each shard's server and numbers are shown to tokens that see every tenant of the queue (a shard's counts sum all of its tenants); this one sees " + sc.describe() + "."
		return p
	}
	var t view.ShardTotals
	p.Rows = make([]view.ShardRow, 0, len(shards))
	for _, st := range shards {
		p.Rows = append(p.Rows, view.ShardRow{Shard: st.Shard, Node: st.Node, Slot: st.Slot,
			Tenants: st.Tenants, Queued: st.Queued, Leased: st.Leased, ClaimRate: st.ClaimRate})
		t.Tenants += st.Tenants
		t.Queued += st.Queued
		t.Leased += st.Leased
		t.ClaimRate += st.ClaimRate
	}
	p.Total = &t
	return p
}

// shardsAPI is the shards section's twin, GET /api/shards?queue=: the
// queue's shards, or sharded false when it has one (or the backing
// reports none). A failed read is an error answer, as on every /api/
// route.
func (s *Server) shardsAPI(c echo.Context) (view.Shards, int, error) {
	queue, err := s.queueParam(c)
	if err != nil {
		return view.Shards{}, 0, err
	}
	p := view.Shards{Queue: queue}
	r, ok := s.shardReporter()
	if !ok {
		return p, http.StatusOK, nil
	}
	shards, err := r.Shards(c.Request().Context(), queue)
	if err != nil {
		return p, 0, err
	}
	p.Count = len(shards)
	if len(shards) > 1 {
		p.Sharded = true
		p.ShardsPanel = s.shardsOf(c, shards)
	}
	return p, http.StatusOK, nil
}
