package view

import (
	"encoding/json"
	"time"

	"github.com/adkit/adk/modules/contract"
)

// Notes of the run version pages.
const (
	// NoStateNote: the dashboard was given no state store.
	NoStateNote = "This dashboard was given no state store (Config.State), so it shows no runs."
	// NoRunKeeperNote: the state store keeps no versions at all.
	NoRunKeeperNote = "This state store keeps no run versions: its backing offers no version history (contract.RunKeeper), so only the run as it is now can be read, on the item page."
	// NoVersionsKeptNote: the store could keep versions, but its policy
	// keeps none.
	NoVersionsKeptNote = "This state store is opened without version history (Settings.Runs keeps no versions): only the current version is listed. Set Settings.Runs.KeepVersions or VersionAge to keep earlier ones."
)

// RunVersions lists a run's versions, newest first: the run as it is now,
// then the versions its store kept.
type RunVersions struct {
	Chrome `json:"-"`
	Tenant string `json:"tenant"`
	ID     string `json:"id"`
	// Queue is the queue of the item the page was reached from, for the
	// link back to it.
	Queue string `json:"queue,omitempty"`
	// Kept is false when the store offers no versions; Note says why, or
	// that its policy keeps none.
	Kept bool   `json:"versions_kept"`
	Note string `json:"note,omitempty"`
	// Found is false when the run does not exist.
	Found bool `json:"found"`
	// Current is the run's version now; Policy what its store keeps.
	Current int64               `json:"current_version,omitempty"`
	Policy  *contract.RunPolicy `json:"policy,omitempty"`
	Rows    []RunVersionRow     `json:"versions"`
	Limit   int                 `json:"limit"`
	Cursor  string              `json:"cursor,omitempty"`
	// Next is the cursor of the older versions, Prev of the newer ones;
	// Newer says there are newer ones (Prev is "" when they are the
	// first page).
	Next  string `json:"next,omitempty"`
	Prev  string `json:"prev,omitempty"`
	Newer bool   `json:"has_newer"`
}

// RunVersionRow is one version of a run.
type RunVersionRow struct {
	Version int64 `json:"version"`
	// Current marks the run as it is now.
	Current   bool              `json:"current"`
	UpdatedAt time.Time         `json:"updated_at"`
	Status    string            `json:"status"`
	Session   string            `json:"session,omitempty"`
	Counters  contract.Counters `json:"counters"`
	Fence     int64             `json:"fence"`
	Bytes     int               `json:"data_bytes"`
	// Preview is the start of the blob as text (escaped by the
	// template), cut short.
	Preview string `json:"data_preview"`
}

// RunVersionRowOf describes version r of a run whose current version is
// current, previewing its blob with preview.
func RunVersionRowOf(r contract.Run, current int64, preview func([]byte) string) RunVersionRow {
	return RunVersionRow{
		Version: r.Version, Current: r.Version == current, UpdatedAt: r.UpdatedAt, Status: r.Status, Session: r.Session,
		Counters: r.Counters, Fence: r.Fence, Bytes: len(r.Data), Preview: preview(r.Data),
	}
}

// RunVersion is one version of a run in full.
type RunVersion struct {
	Chrome `json:"-"`
	Tenant string `json:"tenant"`
	ID     string `json:"id"`
	Queue  string `json:"queue,omitempty"`
	Kept   bool   `json:"versions_kept"`
	Note   string `json:"note,omitempty"`
	// Found is false when the run or that version is not kept.
	Found bool           `json:"found"`
	Asked int64          `json:"asked_version"`
	Row   *RunVersionRow `json:"version,omitempty"`
	// Data is the blob as stored; Text the blob as the page shows it
	// (indented when it is JSON, cut at a bound, Cut then true).
	Data json.RawMessage `json:"data,omitempty"`
	Text string          `json:"-"`
	Cut  bool            `json:"-"`
}

// PolicyText says what a RunPolicy keeps: "the latest 10 versions",
// "versions younger than 1h, at most 1,000".
func PolicyText(p contract.RunPolicy) string {
	var s string
	switch {
	case p.KeepVersions > 0 && p.VersionAge > 0:
		s = "the latest " + Count(p.KeepVersions, "earlier version") + " of each run, while younger than " + Dur(p.VersionAge)
	case p.KeepVersions > 0:
		s = "the latest " + Count(p.KeepVersions, "earlier version") + " of each run"
	case p.VersionAge > 0:
		s = "earlier versions younger than " + Dur(p.VersionAge) + ", at most " + Num(contract.MaxRunVersions) + " of each run"
	default:
		s = "no earlier version"
	}
	if p.RequireFence {
		s += "; every write carries a fence"
	}
	return s
}

// RunLine describes the run of an item page in one line.
func RunLine(r RunInfo, now time.Time) string {
	s := "status " + Label(r.Status) + ", version " + Num(r.Version) + ", " + Count(r.Counters.Iterations, "iteration") + ", " +
		Count(r.Counters.InputTokens+r.Counters.OutputTokens, "token") + ", " + Num(r.DataBytes) + " B of state"
	if r.Fence != 0 {
		s += ", fence " + Token(r.Fence)
	}
	return s + ", updated " + Ago(r.UpdatedAt, now)
}
