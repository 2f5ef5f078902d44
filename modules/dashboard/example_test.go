package dashboard_test

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/memstore"
	"github.com/adkit/adk/modules/dashboard"
)

// A dashboard over the in-memory store. Any backing works the same way:
// pass its queue, and its inspector (for the stores in this kit, the
// same value).
func Example() {
	store := memstore.New(nil, memstore.Settings{})
	_ = store.Enqueue(context.Background(), contract.Item{Tenant: "acme", ID: "run-1"})

	srv, err := dashboard.New(dashboard.Config{
		Queue:     store,
		Inspector: store,
		Backing:   "memory",
		// Token: contract.Secret(os.Getenv("ADK_DASHBOARD_TOKEN")) enables requeue and purge.
	})
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	// In a program: http.ListenAndServe("127.0.0.1:8080", srv).
	ts := httptest.NewServer(srv)
	defer ts.Close()
	resp, err := ts.Client().Get(ts.URL + "/api/tenants")
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, len(body) > 0)
	// Output: 200 true
}
