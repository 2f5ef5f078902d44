package dashboard_test

import (
	"log"
	"net/http"
	"os"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/memstore"
	"github.com/adkit/adk/modules/dashboard"
)

// The shortest use from the README: serve the dashboard of a queue
// (here a memstore; any of the kit's stores is both arguments).
func Example_readme() {
	if os.Getenv("ADK_DASHBOARD_TOKEN") == "" {
		return // serves until stopped; run it in a program of your own
	}
	log.Fatal(readme(memstore.New(nil, memstore.Settings{}), nil))
}

// readme is the README's shortest use, as it stands there.
func readme(q *memstore.Store, tokens []dashboard.Token) error {
	srv, err := dashboard.New(dashboard.Config{
		Queue:     q, // any contract.WorkQueue
		Inspector: q, // its contract.Inspector (the kit's stores are both)
		Backing:   "postgresql",
		Token:     contract.Secret(os.Getenv("ADK_DASHBOARD_TOKEN")), // one read-write token over every tenant
		Tokens:    tokens,                                            // named, scoped ones: dashboard.TokensFromEnv(os.Getenv) or dashboard.ParseTokens(file)
	})
	if err != nil {
		return err
	}
	defer srv.Close() // stops the sampler goroutine
	return http.ListenAndServe("127.0.0.1:8080", srv)
}
