package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/adkit/adk/modules/backing"
	"github.com/adkit/adk/modules/contract"
)

// Exit codes. Scripts can rely on them; the README lists them.
const (
	exitOK       = 0 // done; for health: no check failed
	exitFailed   = 1 // a failure or a refusal: unreachable server, health red, a bulk action without --yes, a signal for an item not waiting for it, a backing without the feature
	exitUsage    = 2 // the command line is wrong: unknown verb or flag, bad value (a contract validation error), no backing named
	exitNotFound = 3 // the item or dead letter asked for does not exist
)

// app is the program with its surroundings, so that tests can run it on
// a memstore and a fake clock.
type app struct {
	stdout, stderr io.Writer
	getenv         func(string) string
	clock          contract.Clock
	// open opens the backing a command names; openServer outside tests.
	open func(context.Context, backing.Config) (*backing.Backing, error)
	// sleep waits between the reads of events --follow; nil means a
	// timer. Tests count the waits instead.
	sleep func(context.Context, time.Duration) error
}

// errNoServer: adkctl runs in a process of its own, so the in-memory
// store of another process is out of its reach.
var errNoServer = errors.New("no backing named: set ADK_REDIS_DSN or ADK_POSTGRES_DSN (or pass --redis / --postgres). " +
	"The in-memory store lives inside the process that made it (make demo's is inside adk-dashboard: see its pages or /api/)")

func openServer(ctx context.Context, c backing.Config) (*backing.Backing, error) {
	if c.Kind() == backing.Memory {
		return nil, errNoServer
	}
	return backing.Open(ctx, c)
}

// usageError is a command line adkctl cannot run: exit 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// notFoundError is a thing asked for by name that is not there: exit 3.
type notFoundError struct{ msg string }

func (e *notFoundError) Error() string { return e.msg }

// refusal is a check that said no (health red, --yes missing): exit 1,
// with the reason already printed.
type refusal struct{ msg string }

func (e *refusal) Error() string { return e.msg }

// command is one verb's command line: the backing flags every verb
// shares, --json, --timeout and, for verbs about one queue, --queue.
type command struct {
	*app
	name    string // "dead list"
	help    string // usage line, description and examples
	fs      *flag.FlagSet
	backing backing.Config
	json    bool
	timeout time.Duration
	queue   string
	// hasQueue: the verb is about one queue (--queue).
	hasQueue bool
	// unbounded: --timeout bounds each call of the verb's body, not the
	// whole run (events --follow).
	unbounded bool
	b         *backing.Backing // once opened
}

func (a *app) command(name, help string, withQueue bool) *command {
	c := &command{app: a, name: name, help: help, hasQueue: withQueue}
	fs := flag.NewFlagSet("adkctl "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // parse errors are reported by run, with the fix
	if withQueue {
		fs.StringVar(&c.queue, "queue", contract.DefaultQueue, "queue name")
	}
	fs.BoolVar(&c.json, "json", false, "print JSON (field names are stable; see tools/README.md) instead of a table")
	fs.DurationVar(&c.timeout, "timeout", 30*time.Second, "give up after this long")
	c.backing.RegisterFlags(fs)
	c.fs = fs
	return c
}

// usage prints the verb's help and its flags.
func (c *command) usage(w io.Writer) {
	fmt.Fprint(w, c.help)
	fmt.Fprintln(w, "\nflags:")
	c.fs.SetOutput(w)
	c.fs.PrintDefaults()
	c.fs.SetOutput(io.Discard)
}

// parse reads the verb's flags. It answers -h/--help itself (exit 0) and
// refuses stray arguments; done is true when run must return code.
func (c *command) parse(args []string) (code int, done bool) {
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "-h" || a == "-help" || a == "--help" || a == "help" {
			c.usage(c.stdout)
			return exitOK, true
		}
	}
	if err := c.fs.Parse(args); err != nil {
		fmt.Fprintf(c.stderr, "adkctl %s: %v\nrun 'adkctl %s --help' for the flags and an example\n", c.name, err, c.name)
		return exitUsage, true
	}
	if c.fs.NArg() > 0 {
		fmt.Fprintf(c.stderr, "adkctl %s: unexpected argument %q: values go in flags (e.g. --tenant acme); run 'adkctl %s --help'\n", c.name, c.fs.Arg(0), c.name)
		return exitUsage, true
	}
	if c.hasQueue {
		if err := contract.ValidateName("--queue", c.queue); err != nil {
			fmt.Fprintf(c.stderr, "adkctl %s: %v\n", c.name, err)
			return exitUsage, true
		}
	}
	c.backing.FillFromEnv(c.getenv)
	c.backing.Clock = c.clock
	if err := c.backing.Validate(); err != nil {
		fmt.Fprintf(c.stderr, "adkctl %s: %v\n", c.name, err)
		return exitUsage, true
	}
	return exitOK, false
}

// exec opens the backing, runs body with a deadline and maps its error to
// an exit code. Unless inspect is set, a PostgreSQL database that fails
// Verify is refused (its tables cannot be read) and a Redis server that
// fails preflight is warned about.
func (c *command) exec(ctx context.Context, inspect bool, body func(ctx context.Context) error) int {
	if !c.unbounded {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	b, err := c.open(ctx, c.backing)
	if err != nil {
		return c.report(err)
	}
	defer b.Close()
	c.b = b
	if b.Verdict != nil && !inspect {
		if b.Name == backing.PostgreSQL {
			return c.report(fmt.Errorf("the database fails verify, so its tables cannot be read: %w", b.Verdict))
		}
		c.warnf("warning: the %s server fails its preflight (the command goes on; adkctl health shows every check; "+
			"pass --redis-volatile or --redis-assume-durable if the deployment sets them): %s", b.Name, c.redact(b.Verdict.Error()))
	}
	return c.report(body(ctx))
}

// report prints err (never a secret) and returns its exit code.
func (c *command) report(err error) int {
	if err == nil {
		return exitOK
	}
	var (
		ue  *usageError
		nf  *notFoundError
		ref *refusal
		ve  *contract.ValidationError
		spe *contract.StatePersistenceError
		nw  *contract.NotWaitingError
	)
	code := exitFailed
	switch {
	case errors.As(err, &ref):
		if ref.msg != "" {
			fmt.Fprintf(c.stderr, "adkctl %s: %s\n", c.name, c.redact(ref.msg))
		}
		return exitFailed
	case errors.As(err, &ue), errors.As(err, &ve), errors.Is(err, errNoServer),
		errors.As(err, &spe) && spe.Reason == contract.ReasonTooLarge:
		code = exitUsage
	case errors.As(err, &nf):
		code = exitNotFound
	case errors.Is(err, contract.ErrNotFound):
		code = exitNotFound
	case errors.As(err, &nw):
		// A refusal: the item is not waiting for that signal; nothing changed.
		code = exitFailed
	case errors.Is(err, context.DeadlineExceeded):
		err = fmt.Errorf("%w: no answer within --timeout %v; check the server, or raise --timeout", err, c.timeout)
	}
	fmt.Fprintf(c.stderr, "adkctl %s: %s\n", c.name, c.redact(err.Error()))
	return code
}

// redact removes the DSN in use, and its password, from s.
func (c *command) redact(s string) string {
	dsn := c.backing.RedisDSN
	if !dsn.IsSet() {
		dsn = c.backing.PostgresDSN
	}
	return backing.Redact(s, dsn)
}

func (c *command) warnf(format string, args ...any) {
	fmt.Fprintf(c.stderr, "adkctl %s: %s\n", c.name, fmt.Sprintf(format, args...))
}

// emit writes v as indented JSON.
func (c *command) emit(v any) error {
	enc := json.NewEncoder(c.stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// table is an aligned table written to the command's output on Flush.
type table struct {
	tw  *tabwriter.Writer
	buf bytes.Buffer
	out io.Writer
}

// table starts an aligned table with the given header.
func (c *command) table(header ...string) *table {
	t := &table{out: c.stdout}
	t.tw = tabwriter.NewWriter(&t.buf, 0, 0, 2, ' ', 0)
	row(t, header...)
	return t
}

func (t *table) Write(p []byte) (int, error) { return t.tw.Write(p) }

// Flush aligns the rows and writes them without the padding an empty
// last column leaves at the end of a line.
func (t *table) Flush() error {
	if err := t.tw.Flush(); err != nil {
		return err
	}
	for line := range strings.Lines(t.buf.String()) {
		if _, err := io.WriteString(t.out, strings.TrimRight(line, " \n")+"\n"); err != nil {
			return err
		}
	}
	t.buf.Reset()
	return nil
}

func row(w io.Writer, cells ...string) { fmt.Fprintln(w, strings.Join(cells, "\t")) }

// noteEmptyQueue tells a user who looked at a queue that holds nothing
// which queues do hold something: the usual cause is a wrong --queue.
func (c *command) noteEmptyQueue(ctx context.Context) {
	queues, err := c.b.Inspector.Queues(ctx)
	if err != nil {
		return
	}
	for _, q := range queues {
		if q == c.queue {
			return
		}
	}
	if len(queues) == 0 {
		c.warnf("note: no queue holds any item")
		return
	}
	names := make([]string, len(queues))
	for i, q := range queues {
		names[i] = quoteIfNeeded(clean(q))
	}
	c.warnf("note: queue %s holds no items; queues with items: %s (pass --queue)", quoteIfNeeded(clean(c.queue)), strings.Join(names, ", "))
}

// pageFlags are --limit, --cursor and --all of the listing verbs.
type pageFlags struct {
	limit  int
	cursor string
	all    bool
}

func (p *pageFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&p.limit, "limit", contract.DefaultPageSize, fmt.Sprintf("rows per page (1..%d)", contract.MaxPageSize))
	fs.StringVar(&p.cursor, "cursor", "", "start at this page (the \"next\" of the previous one)")
	fs.BoolVar(&p.all, "all", false, "follow every page to the end")
}

func (p *pageFlags) check() error {
	if p.limit < 1 || p.limit > contract.MaxPageSize {
		return usagef("--limit is %d; give 1 to %d", p.limit, contract.MaxPageSize)
	}
	return nil
}

// walk fetches the page at p.cursor, hands each row to each, and with
// p.all follows the next cursors to the end. It returns the cursor of the
// page after the last one fetched ("" at the end).
func walk[T any](p pageFlags, fetch func(contract.PageRequest) ([]T, string, error), each func(T)) (string, error) {
	cursor := p.cursor
	for {
		rows, next, err := fetch(contract.PageRequest{Cursor: cursor, Limit: p.limit})
		if err != nil {
			return "", err
		}
		for _, r := range rows {
			each(r)
		}
		if cursor = next; !p.all || cursor == "" {
			return cursor, nil
		}
	}
}
