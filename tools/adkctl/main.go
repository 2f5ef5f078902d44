// Command adkctl is the operator's tool for the adk kit. Its schema
// commands print, apply and verify the PostgreSQL schema the pgstore
// backings read:
//
//	adkctl schema print                 # the SQL, for your migration tool
//	adkctl schema apply  --dsn URL      # apply it (development; explicit)
//	adkctl schema verify --dsn URL      # what OpenStateStore checks; exit 1 on refusal
//
// The DSN comes from --dsn or ADK_POSTGRES_DSN and is never printed.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}

const usage = `usage: adkctl <command> ...

commands:
  schema print|apply|verify   the PostgreSQL schema of pgstore (adkctl schema -h)
`

// run executes one command line and returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "schema":
		return runSchema(ctx, args[1:], stdout, stderr, getenv)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "adkctl: unknown command %q\n%s", args[0], usage)
	return 2
}
