package dashboard

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/dashboard/internal/view"
)

const (
	// defaultVersionsPage is how many versions the versions page lists.
	defaultVersionsPage = 50
	// versionTrail bounds the pages a versions cursor remembers for its
	// newer link; paging newer from deeper than that returns to the
	// newest page.
	versionTrail = 32
	// blobShown is how much of a blob the version page shows.
	blobShown = 64 << 10
)

// runKeeper is the state store's RunKeeper and the note the pages show
// when it has none.
func (s *Server) runKeeper() (contract.RunKeeper, string) {
	if s.cfg.State == nil {
		return nil, view.NoStateNote
	}
	rk, ok := contract.AsRunKeeper(s.cfg.State)
	if !ok {
		return nil, view.NoRunKeeperNote
	}
	return rk, ""
}

// runPolicy is what the state store keeps, when it says.
func (s *Server) runPolicy() (contract.RunPolicy, bool) {
	p, ok := s.cfg.State.(interface{ RunPolicy() contract.RunPolicy })
	if !ok {
		return contract.RunPolicy{}, false
	}
	return p.RunPolicy(), true
}

// runParams reads and checks the run a request is about, and that the
// request's scope sees it: its tenant must be in the scope and, for a
// token limited to some queues, the item of the same tenant and id must
// be in one of them (queue= names it), as the item page shows a run only
// beside its item.
func (s *Server) runParams(c echo.Context) (tenant, id, queue string, err error) {
	tenant, id, queue = c.QueryParam("tenant"), c.QueryParam("id"), c.QueryParam("queue")
	if err := contract.ValidateRunKey(tenant, id); err != nil {
		return tenant, id, queue, err
	}
	if queue != "" {
		if err := contract.ValidateName("queue", queue); err != nil {
			return tenant, id, queue, err
		}
	}
	sc := s.scopeOf(c)
	if !sc.tenantOK(tenant) {
		return tenant, id, queue, sc.refuse("tenant")
	}
	if sc.queues == nil {
		return tenant, id, queue, nil
	}
	if queue == "" {
		return tenant, id, queue, &contract.ValidationError{Field: "queue", Problem: "is empty; a token of some queues sees the run of an item in one of them: follow the link on the item's page, or name its queue"}
	}
	if err := sc.checkQueue(queue); err != nil {
		return tenant, id, queue, err
	}
	ctx := c.Request().Context()
	key := contract.ItemKey{Tenant: tenant, Queue: queue, ID: id}
	_, ierr := s.insp(c).Item(ctx, key)
	if errors.Is(ierr, contract.ErrNotFound) {
		if hk, ok := s.historyKeeper(); ok {
			if _, herr := hk.History(ctx, key); herr == nil {
				ierr = nil
			}
		}
	}
	if errors.Is(ierr, contract.ErrNotFound) {
		return tenant, id, queue, echo.NewHTTPError(http.StatusNotFound, "no item of that tenant and id in that queue: a token of some queues sees the run of an item in one of them")
	}
	return tenant, id, queue, ierr
}

// versionCursor is where the versions page is: the backing's cursor of
// each page read since the newest, the last being this page's.
type versionCursor []string

func (v versionCursor) String() string {
	if len(v) == 0 {
		return ""
	}
	b, _ := json.Marshal([]string(v))
	return pageCursor{Backing: string(b), Older: true}.String()
}

func parseVersionCursor(s string) (versionCursor, error) {
	pc, err := parsePageCursor(s)
	if err != nil || pc.Backing == "" {
		return nil, err
	}
	var v versionCursor
	if json.Unmarshal([]byte(pc.Backing), &v) != nil || len(v) == 0 || len(v) > versionTrail || slices.Contains(v, "") {
		return nil, &contract.ValidationError{Field: "cursor", Problem: "is not a cursor of the versions page; follow the page links, or drop cursor= to start from the newest version"}
	}
	return v, nil
}

// runVersions lists a run's versions, newest first.
func (s *Server) runVersions(c echo.Context) (view.RunVersions, int, error) {
	tenant, id, queue, err := s.runParams(c)
	p := view.RunVersions{Tenant: tenant, ID: id, Queue: queue, Rows: []view.RunVersionRow{}}
	p.Chrome = s.chrome(c, "Run versions", view.NavItem, queue)
	p.Chrome.Refresh = 0 // people page through it
	if err != nil {
		return p, 0, err
	}
	if p.Limit, err = intParam(c, "limit", defaultVersionsPage, 1, contract.MaxPageSize); err != nil {
		return p, 0, err
	}
	trail, err := parseVersionCursor(c.QueryParam("cursor"))
	if err != nil {
		return p, 0, err
	}
	p.Cursor = trail.String()
	rk, note := s.runKeeper()
	if rk == nil {
		p.Note = note
		return p, http.StatusOK, nil
	}
	p.Kept = true
	if pol, ok := s.runPolicy(); ok {
		p.Policy = &pol
		if !pol.KeepsVersions() {
			p.Note = view.NoVersionsKeptNote
		}
	}
	ctx := c.Request().Context()
	run, err := s.cfg.State.GetRun(ctx, tenant, id)
	if errors.Is(err, contract.ErrNotFound) {
		return p, http.StatusNotFound, nil
	}
	if err != nil {
		return p, 0, err
	}
	cur := ""
	if len(trail) > 0 {
		cur = trail[len(trail)-1]
	}
	page, err := rk.ListRunVersions(ctx, tenant, id, contract.PageRequest{Cursor: cur, Limit: p.Limit})
	if errors.Is(err, contract.ErrNotFound) { // deleted between the reads
		return p, http.StatusNotFound, nil
	}
	if err != nil {
		return p, 0, err
	}
	p.Found, p.Current = true, run.Version
	if len(page.Versions) > 0 && page.Versions[0].Version > p.Current && cur == "" {
		p.Current = page.Versions[0].Version // written between the reads
	}
	for _, v := range page.Versions {
		p.Rows = append(p.Rows, view.RunVersionRowOf(v, p.Current, preview))
	}
	if len(trail) > 0 {
		p.Newer = true
		p.Prev = trail[:len(trail)-1].String()
	}
	if page.Next != "" {
		next := append(append(versionCursor{}, trail...), page.Next)
		if len(next) > versionTrail {
			next = next[len(next)-versionTrail:]
		}
		p.Next = next.String()
	}
	return p, http.StatusOK, nil
}

// runVersion shows one version of a run.
func (s *Server) runVersion(c echo.Context) (view.RunVersion, int, error) {
	tenant, id, queue, err := s.runParams(c)
	p := view.RunVersion{Tenant: tenant, ID: id, Queue: queue}
	p.Chrome = s.chrome(c, "Run version", view.NavItem, queue)
	p.Chrome.Refresh = 0
	if err != nil {
		return p, 0, err
	}
	v := strings.TrimSpace(c.QueryParam("version"))
	n, perr := strconv.ParseInt(v, 10, 64)
	if perr != nil || contract.ValidateVersion(n) != nil {
		return p, 0, &contract.ValidationError{Field: "version", Problem: "is " + quote(v) + "; give a run version (1 or more), as the versions page lists them"}
	}
	p.Asked = n
	rk, note := s.runKeeper()
	if rk == nil {
		p.Note = note
		return p, http.StatusOK, nil
	}
	p.Kept = true
	if pol, ok := s.runPolicy(); ok && !pol.KeepsVersions() {
		p.Note = view.NoVersionsKeptNote
	}
	ctx := c.Request().Context()
	run, err := rk.GetRunVersion(ctx, tenant, id, n)
	if errors.Is(err, contract.ErrNotFound) {
		return p, http.StatusNotFound, nil
	}
	if err != nil {
		return p, 0, err
	}
	current := run.Version
	if now, err := s.cfg.State.GetRun(ctx, tenant, id); err == nil {
		current = now.Version
	} else if !errors.Is(err, contract.ErrNotFound) {
		return p, 0, err
	}
	p.Found = true
	row := view.RunVersionRowOf(*run, current, preview)
	p.Row = &row
	p.Data = json.RawMessage(run.Data)
	if len(run.Data) == 0 || !json.Valid(run.Data) {
		p.Data = nil
	}
	p.Text, p.Cut = blobText(run.Data)
	return p, http.StatusOK, nil
}

// blobText is a blob as the version page shows it: JSON indented, other
// bytes as text where they are text (hex otherwise), cut at blobShown.
// The template escapes it like every other string.
func blobText(b []byte) (string, bool) {
	if len(b) == 0 {
		return "null", false
	}
	var out bytes.Buffer
	if json.Valid(b) && json.Indent(&out, b, "", "  ") == nil {
		b = out.Bytes()
	}
	if len(b) <= blobShown {
		return strings.ToValidUTF8(string(b), "\uFFFD"), false
	}
	return strings.ToValidUTF8(string(b[:blobShown]), "") + "…", true
}
