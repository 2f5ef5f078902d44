package dashboard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/memstore"
	"github.com/adkit/adk/modules/dashboard"
)

// Named tokens with scopes, as ADK_DASHBOARD_TOKENS or a tokens file
// holds them: a script with the acme team's read-only token sees acme's
// counts only, and cannot act.
func ExampleParseTokens() {
	store := memstore.New(nil, memstore.Settings{})
	_ = store.Enqueue(context.Background(),
		contract.Item{Tenant: "acme", ID: "run-1"}, contract.Item{Tenant: "globex", ID: "run-2"}, contract.Item{Tenant: "globex", ID: "run-3"})

	// Secrets come from `openssl rand -hex 32`; these are examples.
	tokens, err := dashboard.ParseTokens(strings.NewReader(`
name=ops&access=read-write&secret=0d5e2f6c0c1a4b9e8f7d6c5b4a39281706f5e4d3c2b1a09f8e7d6c5b4a392817
name=acme-ro&tenant=acme&secret=7f3a9c2e51d04b6a8e9f0c1d2b3a4f5e6d7c8b9a0f1e2d3c4b5a69788796a5b4`))
	if err != nil {
		panic(err)
	}
	srv, err := dashboard.New(dashboard.Config{Queue: store, Inspector: store, Tokens: tokens})
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	ts := httptest.NewServer(srv)
	defer ts.Close()

	get := func(path, secret string) *http.Response {
		req, _ := http.NewRequest(http.MethodGet, ts.URL+path, nil)
		if secret != "" {
			req.Header.Set("Authorization", "Bearer "+secret)
		}
		resp, err := ts.Client().Do(req)
		if err != nil {
			panic(err)
		}
		return resp
	}
	acme := tokens[1].Secret.Reveal()
	resp := get("/api/overview", acme)
	var ov struct {
		Queues []struct{ Tenants, Ready int }
	}
	_ = json.NewDecoder(resp.Body).Decode(&ov)
	resp.Body.Close()
	fmt.Println("acme-ro sees", ov.Queues[0].Tenants, "tenant,", ov.Queues[0].Ready, "ready item")
	status := func(path, secret string) int {
		resp := get(path, secret)
		resp.Body.Close()
		return resp.StatusCode
	}
	fmt.Println("globex's letters:", status("/api/dead?tenant=globex", acme))
	fmt.Println("without a token:", status("/api/overview", ""))
	fmt.Println("a token is printed as", tokens[1].Secret)
	// Output:
	// acme-ro sees 1 tenant, 1 ready item
	// globex's letters: 403
	// without a token: 401
	// a token is printed as [redacted]
}

// A weak secret refuses the start, saying how to make a strong one.
func ExampleCheckSecret() {
	fmt.Println(dashboard.CheckSecret("ops", "s3cret"))
	// Output: dashboard: token "ops" is too weak: it is 6 characters long, and a token needs at least 32; generate one with `openssl rand -hex 32` (64 hex characters) or `head -c 32 /dev/urandom | base64`
}
