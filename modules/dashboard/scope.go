package dashboard

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/adkit/adk/modules/contract"
)

// scope is what one request may see and do: the tenants and queues of
// its token (nil: all of them), and whether it may act.
type scope struct {
	token   string // the token's name; "" for a visitor holding none
	write   bool
	tenants map[string]bool
	queues  map[string]bool
}

// everything is the scope of a visitor on a dashboard that needs no
// sign-in to read; nothing that of a visitor on one that does (the pages
// refuse them anyway; this keeps the chrome of the sign-in and error
// pages from listing even a queue's name).
var (
	everything = scope{}
	nothing    = scope{tenants: map[string]bool{}, queues: map[string]bool{}}
)

func scopeOfToken(t *Token) scope {
	sc := scope{token: t.Name, write: t.Access == ReadWrite}
	if len(t.Tenants) > 0 {
		sc.tenants = map[string]bool{}
		for _, tn := range t.Tenants {
			sc.tenants[tn] = true
		}
	}
	if len(t.Queues) > 0 {
		sc.queues = map[string]bool{}
		for _, q := range t.Queues {
			sc.queues[contract.QueueName(q)] = true
		}
	}
	return sc
}

// all reports whether the scope sees every tenant of every queue.
func (sc scope) all() bool { return sc.tenants == nil && sc.queues == nil }

func (sc scope) tenantOK(t string) bool { return sc.tenants == nil || sc.tenants[t] }

func (sc scope) queueOK(q string) bool { return sc.queues == nil || sc.queues[contract.QueueName(q)] }

// tenantList is the scope's tenants in byte order (nil when all).
func (sc scope) tenantList() []string {
	if sc.tenants == nil {
		return nil
	}
	out := make([]string, 0, len(sc.tenants))
	for t := range sc.tenants {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

// key names the scope's tenant set for the sampler ("" for all tenants).
func (sc scope) key() string { return strings.Join(sc.tenantList(), "\x00") }

// describe says what the scope sees, for the chrome and for refusals.
func (sc scope) describe() string {
	var parts []string
	if sc.tenants != nil {
		parts = append(parts, "tenants "+quoteList(sc.tenantList()))
	}
	if sc.queues != nil {
		qs := make([]string, 0, len(sc.queues))
		for q := range sc.queues {
			qs = append(qs, q)
		}
		slices.Sort(qs)
		parts = append(parts, "queues "+quoteList(qs))
	}
	if len(parts) == 0 {
		return "every tenant and queue"
	}
	return strings.Join(parts, " in ")
}

func quoteList(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ", ")
}

// ScopeError refuses a request for a tenant or queue outside its token's
// scope (403). It quotes the token's own scope, never what was asked for,
// so the refusal tells nothing of other tenants.
type ScopeError struct {
	Token string
	Sees  string // what the token sees
	Asked string // "tenant", "queue"
}

func (e *ScopeError) Error() string {
	return fmt.Sprintf("token %q sees only %s; that %s is outside its scope", e.Token, e.Sees, e.Asked)
}

func (sc scope) refuse(what string) error {
	return &ScopeError{Token: sc.token, Sees: sc.describe(), Asked: what}
}

// checkQueue refuses a queue outside the scope.
func (sc scope) checkQueue(q string) error {
	if !sc.queueOK(q) {
		return sc.refuse("queue")
	}
	return nil
}

// narrow turns a dead-letter filter into the filters the scope may act
// on: the filter itself when it names one of the scope's tenants (or the
// scope sees every tenant), one per tenant of the scope when it names
// none, and a refusal when it names a tenant or queue outside it.
func (sc scope) narrow(f contract.DeadLetterFilter) ([]contract.DeadLetterFilter, error) {
	if err := sc.checkQueue(f.Queue); err != nil {
		return nil, err
	}
	if f.Tenant != "" {
		if !sc.tenantOK(f.Tenant) {
			return nil, sc.refuse("tenant")
		}
		return []contract.DeadLetterFilter{f}, nil
	}
	if sc.tenants == nil {
		return []contract.DeadLetterFilter{f}, nil
	}
	out := make([]contract.DeadLetterFilter, 0, len(sc.tenants))
	for _, t := range sc.tenantList() {
		nf := f
		nf.Tenant = t
		out = append(out, nf)
	}
	return out, nil
}

// scopedInspector answers within a scope: listings hold only the scope's
// tenants and queues, sums add up only theirs, and a request naming
// another is a *ScopeError before the backing is asked anything.
type scopedInspector struct {
	contract.Inspector
	sc scope
}

func (s scopedInspector) Queues(ctx context.Context) ([]string, error) {
	qs, err := s.Inspector.Queues(ctx)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(qs, func(q string) bool { return !s.sc.queueOK(q) }), nil
}

func (s scopedInspector) Tenants(ctx context.Context, queue string) ([]contract.TenantStats, error) {
	if err := s.sc.checkQueue(queue); err != nil {
		return nil, err
	}
	stats, err := s.Inspector.Tenants(ctx, queue)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(stats, func(t contract.TenantStats) bool { return !s.sc.tenantOK(t.Tenant) }), nil
}

// Rotation keeps the scope's tenants: their order among themselves, and
// their turns of the window.
func (s scopedInspector) Rotation(ctx context.Context, queue string, n int) (contract.Rotation, error) {
	if err := s.sc.checkQueue(queue); err != nil {
		return contract.Rotation{}, err
	}
	rot, err := s.Inspector.Rotation(ctx, queue, n)
	if err != nil {
		return rot, err
	}
	rot.Order = slices.DeleteFunc(rot.Order, func(t string) bool { return !s.sc.tenantOK(t) })
	rot.Recent = slices.DeleteFunc(rot.Recent, func(t contract.Turn) bool { return !s.sc.tenantOK(t.Tenant) })
	return rot, nil
}

// scopedLeaseReads bounds the backing pages one scoped page of leases
// reads to fill itself.
const scopedLeaseReads = 20

func (s scopedInspector) Leases(ctx context.Context, queue string, page contract.PageRequest) (contract.LeasePage, error) {
	if err := s.sc.checkQueue(queue); err != nil {
		return contract.LeasePage{}, err
	}
	if s.sc.tenants == nil {
		return s.Inspector.Leases(ctx, queue, page)
	}
	limit := cmp.Or(page.Limit, contract.DefaultPageSize)
	var out contract.LeasePage
	for range scopedLeaseReads {
		p, err := s.Inspector.Leases(ctx, queue, contract.PageRequest{Cursor: page.Cursor, Limit: limit})
		if err != nil {
			return contract.LeasePage{}, err
		}
		for _, l := range p.Leases {
			if s.sc.tenantOK(l.Item.Tenant) && len(out.Leases) < limit {
				out.Leases = append(out.Leases, l)
			}
		}
		out.Next, page.Cursor = p.Next, p.Next
		if p.Next == "" || len(out.Leases) >= limit {
			break
		}
	}
	return out, nil
}

func (s scopedInspector) Item(ctx context.Context, key contract.ItemKey) (contract.ItemInfo, error) {
	if err := s.sc.checkQueue(key.Queue); err != nil {
		return contract.ItemInfo{}, err
	}
	if !s.sc.tenantOK(key.Tenant) {
		return contract.ItemInfo{}, s.sc.refuse("tenant")
	}
	return s.Inspector.Item(ctx, key)
}

// DeadLetterSummary sums the scope's tenants' summaries when the filter
// names no tenant. Groups of the same error add up; Distinct is then at
// least the number of groups found, and exact when every tenant's groups
// were all listed.
func (s scopedInspector) DeadLetterSummary(ctx context.Context, f contract.DeadLetterFilter, groups int) (contract.DeadLetterSummary, error) {
	fs, err := s.sc.narrow(f)
	if err != nil {
		return contract.DeadLetterSummary{}, err
	}
	if len(fs) == 1 {
		return s.Inspector.DeadLetterSummary(ctx, fs[0], groups)
	}
	ask := groups
	if groups > 0 {
		ask = contract.MaxErrorGroups
	}
	var out contract.DeadLetterSummary
	byError := map[string]*contract.DeadLetterGroup{}
	for _, nf := range fs {
		sum, err := s.Inspector.DeadLetterSummary(ctx, nf, ask)
		if err != nil {
			return contract.DeadLetterSummary{}, err
		}
		out.Total += sum.Total
		out.Distinct = max(out.Distinct, sum.Distinct)
		for _, g := range sum.Groups {
			m := byError[g.Error]
			if m == nil {
				m = &contract.DeadLetterGroup{Error: g.Error}
				byError[g.Error] = m
			}
			m.Count += g.Count
			if g.LastDeadAt.After(m.LastDeadAt) {
				m.LastDeadAt = g.LastDeadAt
			}
		}
	}
	out.Distinct = max(out.Distinct, int64(len(byError)))
	for _, g := range byError {
		out.Groups = append(out.Groups, *g)
	}
	slices.SortFunc(out.Groups, func(a, b contract.DeadLetterGroup) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Error, b.Error))
	})
	if len(out.Groups) > groups {
		out.Groups = out.Groups[:groups]
	}
	return out, nil
}

// scopeOf is the scope of the request's token, or of a visitor holding
// none.
func (s *Server) scopeOf(c echo.Context) scope {
	if t := s.auth.tokenOf(c); t != nil {
		return scopeOfToken(t)
	}
	if s.cfg.RequireSignIn {
		return nothing
	}
	return everything
}

// insp is the Inspector as the request's scope sees it.
func (s *Server) insp(c echo.Context) contract.Inspector {
	sc := s.scopeOf(c)
	if sc.all() {
		return s.cfg.Inspector
	}
	return scopedInspector{Inspector: s.cfg.Inspector, sc: sc}
}

// deadLetters lists dead letters within the request's scope. A scope of
// several tenants lists one tenant's letters at a time (the pages name
// one, see deadFilter).
func (s *Server) deadLetters(c echo.Context, q contract.DeadLetterQuery) (contract.ItemPage, error) {
	fs, err := s.scopeOf(c).narrow(q.DeadLetterFilter)
	if err != nil {
		return contract.ItemPage{}, err
	}
	if len(fs) != 1 {
		return contract.ItemPage{}, &contract.ValidationError{Field: "tenant", Problem: "is empty; a token of several tenants lists one tenant's dead letters at a time, so name one"}
	}
	q.DeadLetterFilter = fs[0]
	return s.cfg.Queue.DeadLetters(c.Request().Context(), q)
}
