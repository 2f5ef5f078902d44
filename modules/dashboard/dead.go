package dashboard

import (
	"net/http"
	"net/url"
	"slices"

	"github.com/labstack/echo/v4"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/dashboard/internal/view"
)

const (
	defaultDeadPage = 50
	// groupsShown is how many error groups the errors page lists.
	groupsShown = 50
)

func (s *Server) deadFilter(c echo.Context, get func(string) string) (view.Filter, error) {
	queue := get("queue")
	if queue == "" {
		var err error
		if queue, err = s.queueParam(c); err != nil {
			return view.Filter{}, err
		}
	}
	f := view.Filter{Queue: queue, Tenant: get("tenant"), ID: get("id"), ErrorContains: get("error")}
	if err := contract.ValidateFilter(toContract(f)); err != nil {
		return f, err
	}
	_, err := s.scopeOf(c).narrow(toContract(f))
	return f, err
}

func toContract(f view.Filter) contract.DeadLetterFilter {
	return contract.DeadLetterFilter{Queue: f.Queue, Tenant: f.Tenant, ID: f.ID, ErrorContains: f.ErrorContains}
}

// deadTotals fills the exact count of the filter and, when the filter
// narrows, the queue's whole count beside it.
func (s *Server) deadTotals(c echo.Context, f view.Filter) (matching, queue int64, err error) {
	ctx := c.Request().Context()
	insp := s.insp(c)
	sum, err := insp.DeadLetterSummary(ctx, toContract(f), 0)
	if err != nil {
		return 0, 0, err
	}
	if !f.Narrowed() {
		return sum.Total, sum.Total, nil
	}
	all, err := insp.DeadLetterSummary(ctx, contract.DeadLetterFilter{Queue: f.Queue}, 0)
	if err != nil {
		return 0, 0, err
	}
	return sum.Total, all.Total, nil
}

// dead lists dead letters newest first. Pages are cursor pages (100,000
// letters stay browsable at the cost of one page each); the page number
// rides along in the link for display and for jumps.
func (s *Server) dead(c echo.Context) (view.Dead, int, error) {
	f, err := s.deadFilter(c, c.QueryParam)
	if err != nil {
		return view.Dead{}, 0, err
	}
	// A token of several tenants lists one tenant's letters at a time:
	// the first of its own until the filter names another.
	if sc := s.scopeOf(c); f.Tenant == "" && len(sc.tenants) > 1 {
		f.Tenant = sc.tenantList()[0]
	}
	limit, err := intParam(c, "limit", defaultDeadPage, 1, contract.MaxPageSize)
	if err != nil {
		return view.Dead{}, 0, err
	}
	cur, err := parsePageCursor(c.QueryParam("cursor"))
	if err != nil {
		return view.Dead{}, 0, err
	}
	pageNo, err := intParam(c, "page", 1, 1, 1<<40)
	if err != nil {
		return view.Dead{}, 0, err
	}
	p := view.Dead{Chrome: s.chrome(c, "Dead letters", view.NavDead, f.Queue), Filter: f, Limit: limit, Page: pageNo}
	p.Chrome.Refresh = 0 // people act on this page; rows must not move under the pointer
	if p.Total, p.QueueTotal, err = s.deadTotals(c, f); err != nil {
		return p, 0, err
	}
	p.Pages = int(max(1, (p.Total+int64(limit)-1)/int64(limit)))
	var items []contract.Item
	if c.QueryParam("jump") != "" {
		n, err := intParam(c, "jump", 1, 1, p.Pages)
		if err != nil {
			return p, 0, err
		}
		p.Page = n
		if items, p.Newer, p.Older, err = s.jumpTo(c, f, n, limit, p.Total); err != nil {
			return p, 0, err
		}
	} else {
		if items, p.Newer, p.Older, err = s.deadPage(c, f, cur, limit); err != nil {
			return p, 0, err
		}
		if cur.Backing != "" && !cur.Older && p.Newer == "" {
			// Paged back to the newest letters: show the first page whole.
			if items, p.Newer, p.Older, err = s.deadPage(c, f, pageCursor{}, limit); err != nil {
				return p, 0, err
			}
			p.Page = 1
		}
		if p.Older == "" && len(items) > 0 {
			p.Page = p.Pages // the oldest letters: the last page whatever the link said
		}
	}
	p.Page = min(p.Page, p.Pages)
	// Where a cursor is not known (beside a page reached by number), the
	// pager links by number instead.
	if p.Newer == "" && p.Page > 1 {
		p.NewerJump = p.Page - 1
	}
	if p.Older == "" && p.Page < p.Pages {
		p.OlderJump = p.Page + 1
	}
	p.Rows = make([]view.DeadRow, 0, len(items))
	for _, it := range items {
		p.Rows = append(p.Rows, s.deadRow(it))
	}
	return p, http.StatusOK, nil
}

func (s *Server) deadRow(it contract.Item) view.DeadRow {
	return view.DeadRow{
		Tenant: it.Tenant, Queue: contract.QueueName(it.Queue), ID: it.ID, Attempts: it.Attempts,
		LastError: scrub(it.LastError, s.cfg.DSN), DeadAt: it.DeadAt, Enqueued: it.EnqueuedAt,
		Payload: preview(it.Payload), PayloadBytes: len(it.Payload),
		Pick: pickValue(it.Tenant, it.ID),
	}
}

// deadPage reads one page from cur in display order (newest first) and
// returns the cursors of the pages beside it: newer (toward the newest
// letter) and older, "" where the listing ends.
func (s *Server) deadPage(c echo.Context, f view.Filter, cur pageCursor, limit int) (items []contract.Item, newer, older string, err error) {
	// A cursor names a place between letters: paging older reads newest
	// first below it; paging newer reads oldest first above it and turns
	// the rows around.
	goingOlder := cur.Backing == "" || cur.Older
	page, err := s.deadLetters(c, contract.DeadLetterQuery{DeadLetterFilter: toContract(f), Newest: goingOlder,
		Page: contract.PageRequest{Cursor: cur.Backing, Limit: limit}})
	if err != nil {
		return nil, "", "", err
	}
	items = page.Items
	if goingOlder {
		if page.Next != "" {
			older = pageCursor{Backing: page.Next, Older: true}.String()
		}
		if cur.Backing != "" {
			newer = pageCursor{Backing: cur.Backing}.String()
		}
		return items, newer, older, nil
	}
	slices.Reverse(items)
	older = pageCursor{Backing: cur.Backing, Older: true}.String()
	if page.Next != "" {
		newer = pageCursor{Backing: page.Next}.String()
	}
	return items, newer, older, nil
}

// jumpTo reads page n (newest first, limit letters a page) with one
// skipping query from the nearer end of the listing, and returns the
// cursors beside it that the query yields: toward older letters when read
// from the newest end, toward newer ones when read from the oldest.
func (s *Server) jumpTo(c echo.Context, f view.Filter, n, limit int, total int64) (items []contract.Item, newer, older string, err error) {
	if n <= 1 {
		return s.deadPage(c, f, pageCursor{}, limit)
	}
	skipNewest := int64(n-1) * int64(limit)
	// Counted from the oldest end, the letters older than the page; the
	// last page holds what the count leaves over.
	skipOldest := max(total-int64(n)*int64(limit), 0)
	if skipNewest <= skipOldest {
		page, err := s.deadLetters(c, contract.DeadLetterQuery{DeadLetterFilter: toContract(f), Newest: true,
			Skip: int(skipNewest), Page: contract.PageRequest{Limit: limit}})
		if err != nil {
			return nil, "", "", err
		}
		if page.Next != "" {
			older = pageCursor{Backing: page.Next, Older: true}.String()
		}
		return page.Items, "", older, nil
	}
	read := int(min(int64(limit), total-skipNewest))
	page, err := s.deadLetters(c, contract.DeadLetterQuery{DeadLetterFilter: toContract(f),
		Skip: int(skipOldest), Page: contract.PageRequest{Limit: max(read, 1)}})
	if err != nil {
		return nil, "", "", err
	}
	slices.Reverse(page.Items)
	if page.Next != "" {
		newer = pageCursor{Backing: page.Next}.String()
	}
	return page.Items, newer, "", nil
}

// pickValue encodes one letter for a selection checkbox: tenant and id
// may hold any character but NUL, so they travel as a query string.
func pickValue(tenant, id string) string {
	return url.Values{"t": {tenant}, "i": {id}}.Encode()
}

func parsePick(v string) (tenant, id string, ok bool) {
	q, err := url.ParseQuery(v)
	if err != nil || len(q["t"]) != 1 || len(q["i"]) != 1 || q.Get("t") == "" || q.Get("i") == "" {
		return "", "", false
	}
	return q.Get("t"), q.Get("i"), true
}

// deadErrors groups the letters of a filter by error, largest first.
func (s *Server) deadErrors(c echo.Context) (view.DeadErrors, int, error) {
	f, err := s.deadFilter(c, c.QueryParam)
	if err != nil {
		return view.DeadErrors{}, 0, err
	}
	p := view.DeadErrors{Chrome: s.chrome(c, "Dead letters by error", view.NavDead, f.Queue), Filter: f}
	p.Chrome.Refresh = 0
	sum, err := s.insp(c).DeadLetterSummary(c.Request().Context(), toContract(f), groupsShown)
	if err != nil {
		return p, 0, err
	}
	p.Total, p.Distinct, p.Groups = sum.Total, sum.Distinct, s.errorGroups(sum)
	return p, http.StatusOK, nil
}

func (s *Server) errorGroups(sum contract.DeadLetterSummary) []view.ErrorGroup {
	out := make([]view.ErrorGroup, 0, len(sum.Groups))
	for _, g := range sum.Groups {
		eg := view.ErrorGroup{Error: scrub(g.Error, s.cfg.DSN), Count: g.Count, LastDeadAt: g.LastDeadAt}
		if sum.Total > 0 {
			eg.Share = float64(g.Count) / float64(sum.Total)
		}
		out = append(out, eg)
	}
	return out
}

// maxPicks bounds a selection: one page of the largest size.
const maxPicks = contract.MaxPageSize

// picks reads a selection's letters, each inside the filter or refused.
func picks(f view.Filter, values []string) ([]view.Picked, error) {
	if len(values) == 0 {
		return nil, &contract.ValidationError{Field: "pick", Problem: "is empty; tick the letters to act on first"}
	}
	if len(values) > maxPicks {
		return nil, &contract.ValidationError{Field: "pick", Problem: "holds more letters than one page can show; act on the filter instead"}
	}
	out := make([]view.Picked, 0, len(values))
	seen := map[view.Picked]bool{}
	for _, v := range values {
		t, id, ok := parsePick(v)
		if !ok {
			return nil, &contract.ValidationError{Field: "pick", Problem: "is not a letter this dashboard listed"}
		}
		// A selection is taken from a filtered page and never reaches past
		// its filter.
		if (f.Tenant != "" && t != f.Tenant) || (f.ID != "" && id != f.ID) {
			return nil, &contract.ValidationError{Field: "pick", Problem: "names a letter outside the filter the page showed"}
		}
		p := view.Picked{Tenant: t, ID: id}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out, nil
}

// pickFilter is the filter acting on one picked letter: the page's
// filter narrowed to it, so the error part still holds.
func pickFilter(f view.Filter, p view.Picked) contract.DeadLetterFilter {
	cf := toContract(f)
	cf.Tenant, cf.ID = p.Tenant, p.ID
	return cf
}

// confirm counts what a bulk action would touch, for the step before it.
func (s *Server) confirm(c echo.Context) (view.Confirm, int, error) {
	ctx := c.Request().Context()
	f, err := s.deadFilter(c, c.QueryParam)
	if err != nil {
		return view.Confirm{}, 0, err
	}
	a := action(c.QueryParam("action"))
	if a != actRequeue && a != actPurge {
		return view.Confirm{}, 0, &contract.ValidationError{Field: "action", Problem: `is ` + quote(string(a)) + `; give "requeue" or "purge"`}
	}
	p := view.Confirm{Chrome: s.chrome(c, "Confirm "+string(a), view.NavDead, f.Queue), Action: string(a), Scope: c.QueryParam("scope"), Filter: f}
	p.Chrome.Refresh = 0
	switch p.Scope {
	case scopeFilter:
		sum, err := s.insp(c).DeadLetterSummary(ctx, toContract(f), 5)
		if err != nil {
			return p, 0, err
		}
		p.Count, p.Groups = sum.Total, s.errorGroups(sum)
	case scopeSelection:
		if p.Picked, err = picks(f, c.QueryParams()["pick"]); err != nil {
			return p, 0, err
		}
		for i, pk := range p.Picked {
			sum, err := s.insp(c).DeadLetterSummary(ctx, pickFilter(f, pk), 0)
			if err != nil {
				return p, 0, err
			}
			p.Picked[i].Dead = sum.Total == 1
			p.Count += sum.Total
		}
	default:
		return p, 0, &contract.ValidationError{Field: "scope", Problem: `is ` + quote(p.Scope) + `; give "filter" or "selection"`}
	}
	return p, http.StatusOK, nil
}
