package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/adkit/adk/modules/contract"
)

const runsHelp = `usage: adkctl runs versions|show|fork --tenant NAME --id ID [flags]

The versions of one run, as its state store keeps them (RunPolicy
KeepVersions or VersionAge in the deployment's Settings.Runs): every put
keeps one, and so does every patch that changes the status.

  versions   the run's versions, newest first (the current one marked):
             time, status, counters, fence, size and the start of the blob;
             paged with --limit, --cursor and --all
  show       one version (--version N) in full, its blob as text
  fork       a new run (--to NEW-ID) made from one version (--version N):
             to go on from a step that went wrong; refused when NEW-ID exists

A store that keeps no versions lists only the current run. Exit 3 when the
run or the version is not kept.

examples:
  adkctl runs versions --tenant acme --id run-42
  adkctl runs show --tenant acme --id run-42 --version 7 --json
  adkctl runs fork --tenant acme --id run-42 --version 7 --to run-42-retry
`

// runVersionRow is one line of `adkctl runs versions --json`: the names
// are the dashboard's /api/run/versions ones.
type runVersionRow struct {
	Version   int64             `json:"version"`
	Current   bool              `json:"current"`
	UpdatedAt time.Time         `json:"updated_at"`
	Status    string            `json:"status"`
	Session   string            `json:"session,omitempty"`
	Counters  contract.Counters `json:"counters"`
	Fence     int64             `json:"fence"`
	Bytes     int               `json:"data_bytes"`
	Preview   string            `json:"preview,omitempty"`
}

// runVersionsOut is `adkctl runs versions --json`.
type runVersionsOut struct {
	Tenant   string          `json:"tenant"`
	ID       string          `json:"id"`
	Current  int64           `json:"current_version"`
	Versions []runVersionRow `json:"versions"`
	Next     string          `json:"next"`
}

func (a *app) runs(ctx context.Context, args []string) int {
	if len(args) == 0 {
		fmt.Fprint(a.stderr, runsHelp)
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(a.stdout, runsHelp)
		return exitOK
	case "versions":
		return a.runVersions(ctx, args[1:])
	case "show":
		return a.runShow(ctx, args[1:])
	case "fork":
		return a.runFork(ctx, args[1:])
	}
	fmt.Fprintf(a.stderr, "adkctl runs: unknown command %q: give versions, show or fork (adkctl runs --help)\n", args[0])
	return exitUsage
}

// runFlags are the flags naming one run (and, for show and fork, one of
// its versions).
type runFlags struct {
	tenant, id string
	version    int64
}

func (r *runFlags) register(c *command, withVersion bool) {
	c.fs.StringVar(&r.tenant, "tenant", "", "the run's tenant (required)")
	c.fs.StringVar(&r.id, "id", "", "the run's id (required)")
	if withVersion {
		c.fs.Int64Var(&r.version, "version", 0, "the version (required; adkctl runs versions lists them)")
	}
}

func (r *runFlags) check(verb string, withVersion bool) error {
	if r.tenant == "" || r.id == "" {
		return usagef("give both --tenant and --id (e.g. adkctl runs %s --tenant acme --id run-42)", verb)
	}
	if err := contract.ValidateRunKey(r.tenant, r.id); err != nil {
		return usagef("%v", err)
	}
	if withVersion {
		if err := contract.ValidateVersion(r.version); err != nil {
			return usagef("--version: %v", err)
		}
	}
	return nil
}

// keeper is the backing's RunKeeper, or why there is none.
func (c *command) keeper() (contract.RunKeeper, error) {
	if c.b.State == nil {
		return nil, &refusal{msg: "the " + c.b.Name + " backing has no state store"}
	}
	rk, ok := contract.AsRunKeeper(c.b.State)
	if !ok {
		return nil, &refusal{msg: "the " + c.b.Name + " state store keeps no run versions"}
	}
	return rk, nil
}

// runNotFound names the run (and version) that is not kept.
func runNotFound(r runFlags) error {
	what := "run " + quoteIfNeeded(clean(r.tenant)) + " / " + quoteIfNeeded(clean(r.id))
	if r.version > 0 {
		what = "version " + strconv.FormatInt(r.version, 10) + " of " + what
	}
	return &notFoundError{"no " + what + " (the store keeps what its RunPolicy says: adkctl runs versions lists what is kept)"}
}

func (a *app) runVersions(ctx context.Context, args []string) int {
	c := a.command("runs versions", runsHelp, false)
	var r runFlags
	var p pageFlags
	r.register(c, false)
	p.register(c.fs)
	if code, done := c.parse(args); done {
		return code
	}
	err := r.check("versions", false)
	if err == nil {
		err = p.check()
	}
	if err != nil {
		return c.report(err)
	}
	return c.exec(ctx, false, func(ctx context.Context) error {
		rk, err := c.keeper()
		if err != nil {
			return err
		}
		out := runVersionsOut{Tenant: r.tenant, ID: r.id, Versions: []runVersionRow{}}
		out.Next, err = walk(p, func(pr contract.PageRequest) ([]contract.Run, string, error) {
			page, err := rk.ListRunVersions(ctx, r.tenant, r.id, pr)
			return page.Versions, page.Next, err
		}, func(v contract.Run) {
			if out.Current == 0 {
				out.Current = v.Version // the first page starts with the run as it is
			}
			out.Versions = append(out.Versions, runVersionRow{Version: v.Version, UpdatedAt: v.UpdatedAt, Status: v.Status,
				Session: v.Session, Counters: v.Counters, Fence: v.Fence, Bytes: len(v.Data), Preview: preview(v.Data)})
		})
		if errors.Is(err, contract.ErrNotFound) {
			return runNotFound(r)
		}
		if err != nil {
			return err
		}
		if p.cursor != "" {
			// A later page does not start with the current run: ask for it.
			cur, err := c.b.State.GetRun(ctx, r.tenant, r.id)
			if err != nil {
				if errors.Is(err, contract.ErrNotFound) {
					return runNotFound(r)
				}
				return err
			}
			out.Current = cur.Version
		}
		for i := range out.Versions {
			out.Versions[i].Current = out.Versions[i].Version == out.Current
		}
		if c.json {
			return c.emit(out)
		}
		now := c.clock.Now()
		tw := c.table("VERSION", "UPDATED", "STATUS", "FENCE", "ITERATIONS", "TOKENS IN/OUT", "COST µ", "BYTES", "DATA")
		for _, v := range out.Versions {
			ver := strconv.FormatInt(v.Version, 10)
			if v.Current {
				ver += " (current)"
			}
			row(tw, ver, ago(now, v.UpdatedAt), clean(cut(v.Status, 30)), strconv.FormatInt(v.Fence, 10),
				strconv.FormatInt(v.Counters.Iterations, 10),
				strconv.FormatInt(v.Counters.InputTokens, 10)+"/"+strconv.FormatInt(v.Counters.OutputTokens, 10),
				strconv.FormatInt(v.Counters.CostMicros, 10), strconv.Itoa(v.Bytes), clean(cut(v.Preview, 40)))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if len(out.Versions) == 1 && out.Next == "" && p.cursor == "" {
			fmt.Fprintln(c.stdout, "only the current run is kept (the deployment's Settings.Runs keeps no earlier versions, or none was written yet)")
		}
		printNext(c, out.Next)
		return nil
	})
}

// runOut is `adkctl runs show --json` and `adkctl runs fork --json`: the
// run, its blob as the store holds it (base64) and, when it is JSON, as
// JSON.
type runOut struct {
	Run     *contract.Run   `json:"run"`
	Current bool            `json:"current"`
	JSON    json.RawMessage `json:"data_json,omitempty"`
}

func (a *app) runShow(ctx context.Context, args []string) int {
	c := a.command("runs show", runsHelp, false)
	var r runFlags
	r.register(c, true)
	if code, done := c.parse(args); done {
		return code
	}
	if err := r.check("show", true); err != nil {
		return c.report(err)
	}
	return c.exec(ctx, false, func(ctx context.Context) error {
		rk, err := c.keeper()
		if err != nil {
			return err
		}
		v, err := rk.GetRunVersion(ctx, r.tenant, r.id, r.version)
		if errors.Is(err, contract.ErrNotFound) {
			return runNotFound(r)
		}
		if err != nil {
			return err
		}
		cur, err := c.b.State.GetRun(ctx, r.tenant, r.id)
		if err != nil && !errors.Is(err, contract.ErrNotFound) {
			return err
		}
		return c.printRun(v, cur != nil && cur.Version == v.Version, "version "+strconv.FormatInt(v.Version, 10))
	})
}

func (a *app) runFork(ctx context.Context, args []string) int {
	c := a.command("runs fork", runsHelp, false)
	var r runFlags
	r.register(c, true)
	to := c.fs.String("to", "", "the id of the new run (required; refused when it exists)")
	if code, done := c.parse(args); done {
		return code
	}
	err := r.check("fork", true)
	if err == nil && *to == "" {
		err = usagef("give --to, the id of the new run (e.g. --to %s-retry)", r.id)
	}
	if err == nil {
		if verr := contract.ValidateRunKey(r.tenant, *to); verr != nil {
			err = usagef("--to: %v", verr)
		}
	}
	if err != nil {
		return c.report(err)
	}
	return c.exec(ctx, false, func(ctx context.Context) error {
		rk, err := c.keeper()
		if err != nil {
			return err
		}
		run, err := rk.ForkRun(ctx, r.tenant, r.id, r.version, *to)
		var conflict *contract.StateConflictError
		switch {
		case errors.Is(err, contract.ErrNotFound):
			return runNotFound(r)
		case errors.As(err, &conflict):
			return &refusal{msg: "run " + quoteIfNeeded(clean(r.tenant)) + " / " + quoteIfNeeded(clean(*to)) +
				" exists already; nothing was written (pick another --to)"}
		case err != nil:
			return err
		}
		return c.printRun(run, true, "forked from "+quoteIfNeeded(clean(r.id))+" version "+strconv.FormatInt(r.version, 10))
	})
}

// printRun prints one run: its fields, then its blob as text.
func (c *command) printRun(run *contract.Run, current bool, title string) error {
	if c.json {
		out := runOut{Run: run, Current: current}
		if json.Valid(run.Data) {
			out.JSON = json.RawMessage(run.Data)
		}
		return c.emit(out)
	}
	tw := c.table("run", quoteIfNeeded(clean(run.Tenant))+" / "+quoteIfNeeded(clean(run.ID))+", "+title)
	ver := strconv.FormatInt(run.Version, 10)
	if current {
		ver += " (current)"
	}
	row(tw, "version", ver)
	row(tw, "status", clean(run.Status))
	if run.Session != "" {
		row(tw, "session", clean(run.Session))
	}
	row(tw, "updated", run.UpdatedAt.UTC().Format(time.RFC3339Nano))
	row(tw, "fence", strconv.FormatInt(run.Fence, 10))
	row(tw, "counters", fmt.Sprintf("iterations %d, cursor %d, tokens in %d / out %d, cost %d micros",
		run.Counters.Iterations, run.Counters.Cursor, run.Counters.InputTokens, run.Counters.OutputTokens, run.Counters.CostMicros))
	row(tw, "data", strconv.Itoa(len(run.Data))+" bytes")
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(run.Data) > 0 {
		fmt.Fprintln(c.stdout, blobText(run.Data))
	}
	return nil
}

// blobText is a run's blob as the terminal shows it: JSON indented, each
// line cleaned; other bytes as their cleaned preview.
func blobText(b []byte) string {
	var out bytes.Buffer
	if !json.Valid(b) || json.Indent(&out, b, "", "  ") != nil {
		return clean(preview(b))
	}
	lines := strings.Split(out.String(), "\n")
	for i, l := range lines {
		lines[i] = clean(l)
	}
	return strings.Join(lines, "\n")
}
