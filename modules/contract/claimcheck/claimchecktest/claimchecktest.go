// Package claimchecktest is the conformance suite for contract.ClaimCheck
// implementations. The in-memory and directory stores of package claimcheck
// pass it, and so must every other blob store (PostgreSQL, S3, ...):
//
//	func TestClaimCheck(t *testing.T) {
//		claimchecktest.ClaimCheck(t, func(t *testing.T) contract.ClaimCheck {
//			return claimcheck.NewMemory()
//		})
//	}
//
// It uses plain testing, so it adds no dependency to the module under test.
package claimchecktest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/adkit/adk/modules/contract"
)

// Factory returns a new, empty store. It registers its own clean-up with
// t.Cleanup, and stores from different calls share nothing.
type Factory func(t *testing.T) contract.ClaimCheck

// ClaimCheck runs the suite against the stores factory returns, one fresh
// store per subtest.
func ClaimCheck(t *testing.T, factory Factory) {
	t.Helper()
	cases := []struct {
		name string
		fn   func(t *testing.T, cc contract.ClaimCheck)
	}{
		{"RoundTrip", testRoundTrip},
		{"EmptyBlob", testEmptyBlob},
		{"CallerSlicesAreNotShared", testNoAliasing},
		{"DistinctRefs", testDistinctRefs},
		{"TenantIsolation", testTenantIsolation},
		{"HostileTenantNames", testHostileTenants},
		{"MissingIsNotFound", testMissing},
		{"BogusRefRefused", testBogusRef},
		{"DeleteIdempotent", testDeleteIdempotent},
		{"LargeBlob", testLarge},
		{"ConcurrentPuts", testConcurrent},
		{"InvalidTenant", testInvalidTenant},
		{"CancelledContext", testCancelled},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.fn(t, factory(t))
		})
	}
}

func put(t *testing.T, cc contract.ClaimCheck, tenant string, data []byte) contract.Ref {
	t.Helper()
	ref, err := cc.Put(context.Background(), tenant, data)
	if err != nil {
		t.Fatalf("Put(%q, %d bytes): %v", tenant, len(data), err)
	}
	if ref == "" {
		t.Fatalf("Put(%q) returned an empty reference", tenant)
	}
	return ref
}

func mustGet(t *testing.T, cc contract.ClaimCheck, tenant string, ref contract.Ref, want []byte) {
	t.Helper()
	got, err := cc.Get(context.Background(), tenant, ref)
	if err != nil {
		t.Fatalf("Get(%q, %q): %v", tenant, ref, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("Get(%q, %q) = %d bytes %.32q..., want %d bytes %.32q...", tenant, ref, len(got), got, len(want), want)
	}
}

func mustBeNotFound(t *testing.T, cc contract.ClaimCheck, tenant string, ref contract.Ref) {
	t.Helper()
	got, err := cc.Get(context.Background(), tenant, ref)
	if !errors.Is(err, contract.ErrNotFound) {
		t.Fatalf("Get(%q, %q) = %d bytes, %v; want an error wrapping ErrNotFound", tenant, ref, len(got), err)
	}
}

func testRoundTrip(t *testing.T, cc contract.ClaimCheck) {
	data := []byte(`{"prompt":"summarise the attached report"}`)
	ref := put(t, cc, "acme", data)
	mustGet(t, cc, "acme", ref, data)
	if err := cc.Delete(context.Background(), "acme", ref); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	mustBeNotFound(t, cc, "acme", ref)
}

func testEmptyBlob(t *testing.T, cc contract.ClaimCheck) {
	ref := put(t, cc, "acme", nil)
	mustGet(t, cc, "acme", ref, nil)
	ref = put(t, cc, "acme", []byte{})
	mustGet(t, cc, "acme", ref, []byte{})
}

func testNoAliasing(t *testing.T, cc contract.ClaimCheck) {
	data := []byte("original")
	ref := put(t, cc, "acme", data)
	copy(data, "XXXXXXXX")
	mustGet(t, cc, "acme", ref, []byte("original"))
	got, err := cc.Get(context.Background(), "acme", ref)
	if err != nil {
		t.Fatal(err)
	}
	copy(got, "YYYYYYYY")
	mustGet(t, cc, "acme", ref, []byte("original"))
}

func testDistinctRefs(t *testing.T, cc contract.ClaimCheck) {
	a := put(t, cc, "acme", []byte("same"))
	b := put(t, cc, "acme", []byte("same"))
	if a == b {
		t.Fatalf("two Puts of the same bytes returned the same reference %q; each Put must get its own", a)
	}
	if err := cc.Delete(context.Background(), "acme", a); err != nil {
		t.Fatal(err)
	}
	mustGet(t, cc, "acme", b, []byte("same"))
}

func testTenantIsolation(t *testing.T, cc contract.ClaimCheck) {
	ctx := context.Background()
	refA := put(t, cc, "a", []byte("for a"))
	refB := put(t, cc, "b", []byte("for b"))
	mustGet(t, cc, "a", refA, []byte("for a"))
	mustGet(t, cc, "b", refB, []byte("for b"))
	mustBeNotFound(t, cc, "b", refA)
	mustBeNotFound(t, cc, "a", refB)
	// Deleting through the wrong tenant must not reach the blob.
	if err := cc.Delete(ctx, "b", refA); err != nil {
		t.Fatalf("Delete(b, refA): %v", err)
	}
	mustGet(t, cc, "a", refA, []byte("for a"))
}

func testHostileTenants(t *testing.T, cc contract.ClaimCheck) {
	tenants := []string{"a", "a:b", "b:x", "../x", "a/b", `a\b`, ".", "..", "{x}", "x y", "ünïcødé", "A", "CON", string(bytes.Repeat([]byte("t"), contract.MaxNameBytes))}
	refs := make([]contract.Ref, len(tenants))
	for i, tn := range tenants {
		refs[i] = put(t, cc, tn, []byte("blob of "+tn))
	}
	for i, tn := range tenants {
		mustGet(t, cc, tn, refs[i], []byte("blob of "+tn))
		for j, other := range tenants {
			if i != j {
				mustBeNotFound(t, cc, other, refs[i])
			}
		}
	}
}

func testMissing(t *testing.T, cc contract.ClaimCheck) {
	ref := put(t, cc, "acme", []byte("x"))
	if err := cc.Delete(context.Background(), "acme", ref); err != nil {
		t.Fatal(err)
	}
	mustBeNotFound(t, cc, "acme", ref)
	mustBeNotFound(t, cc, "never-used", ref)
}

// A reference the store never issued is refused or not found; it must
// never read anything, whatever it spells (a file store must not follow a
// path inside it).
func testBogusRef(t *testing.T, cc contract.ClaimCheck) {
	ctx := context.Background()
	put(t, cc, "acme", []byte("secret of acme"))
	put(t, cc, "other", []byte("secret of other"))
	for _, ref := range []contract.Ref{"", "nope", "../x", "..", ".", "/etc/passwd", "a/b", `a\b`, "x\x00y", "../other"} {
		got, err := cc.Get(ctx, "acme", ref)
		if err == nil {
			t.Fatalf("Get(acme, %q) = %q, nil; want ErrNotFound or a validation error", ref, got)
		}
		if !errors.Is(err, contract.ErrNotFound) && !errors.Is(err, contract.ErrInvalid) {
			t.Fatalf("Get(acme, %q): %v; want ErrNotFound or ErrInvalid", ref, err)
		}
		if err := cc.Delete(ctx, "acme", ref); err != nil && !errors.Is(err, contract.ErrInvalid) {
			t.Fatalf("Delete(acme, %q): %v; want nil or ErrInvalid", ref, err)
		}
	}
}

func testDeleteIdempotent(t *testing.T, cc contract.ClaimCheck) {
	ctx := context.Background()
	ref := put(t, cc, "acme", []byte("x"))
	for i := range 2 {
		if err := cc.Delete(ctx, "acme", ref); err != nil {
			t.Fatalf("Delete #%d: %v; deleting a missing blob is not an error", i+1, err)
		}
	}
	if err := cc.Delete(ctx, "never-used", ref); err != nil {
		t.Fatalf("Delete for a tenant with no blobs: %v", err)
	}
}

func testLarge(t *testing.T, cc contract.ClaimCheck) {
	data := make([]byte, 5<<20)
	for i := range data {
		data[i] = byte(i*7 + i>>10)
	}
	ref := put(t, cc, "acme", data)
	mustGet(t, cc, "acme", ref, data)
}

func testConcurrent(t *testing.T, cc contract.ClaimCheck) {
	const workers, each = 8, 16
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		refs = map[contract.Ref]string{}
		errs []error
	)
	for w := range workers {
		wg.Go(func() {
			tenant := fmt.Sprintf("tenant-%d", w%3)
			for i := range each {
				data := fmt.Sprintf("%s blob %d/%d", tenant, w, i)
				ref, err := cc.Put(context.Background(), tenant, []byte(data))
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				} else if _, dup := refs[ref]; dup {
					errs = append(errs, fmt.Errorf("reference %q issued twice", ref))
				} else {
					refs[ref] = tenant + "\x00" + data
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("concurrent puts: %v", errors.Join(errs...))
	}
	if len(refs) != workers*each {
		t.Fatalf("got %d distinct references, want %d", len(refs), workers*each)
	}
	for ref, v := range refs {
		tenant, data, _ := bytes.Cut([]byte(v), []byte{0})
		mustGet(t, cc, string(tenant), ref, data)
	}
}

func testInvalidTenant(t *testing.T, cc contract.ClaimCheck) {
	ctx := context.Background()
	good := put(t, cc, "acme", []byte("x"))
	for _, tenant := range []string{"", "a\x00b", "\xff\xfe", string(bytes.Repeat([]byte("t"), contract.MaxNameBytes+1))} {
		if _, err := cc.Put(ctx, tenant, []byte("x")); !errors.Is(err, contract.ErrInvalid) {
			t.Errorf("Put(%q): %v; want a *contract.ValidationError", tenant, err)
		}
		if _, err := cc.Get(ctx, tenant, good); !errors.Is(err, contract.ErrInvalid) {
			t.Errorf("Get(%q): %v; want a *contract.ValidationError", tenant, err)
		}
		if err := cc.Delete(ctx, tenant, good); !errors.Is(err, contract.ErrInvalid) {
			t.Errorf("Delete(%q): %v; want a *contract.ValidationError", tenant, err)
		}
	}
	mustGet(t, cc, "acme", good, []byte("x"))
}

func testCancelled(t *testing.T, cc contract.ClaimCheck) {
	ref := put(t, cc, "acme", []byte("x"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := cc.Put(ctx, "acme", []byte("y")); !errors.Is(err, context.Canceled) {
		t.Errorf("Put with a cancelled context: %v; want context.Canceled", err)
	}
	if _, err := cc.Get(ctx, "acme", ref); !errors.Is(err, context.Canceled) {
		t.Errorf("Get with a cancelled context: %v; want context.Canceled", err)
	}
	if err := cc.Delete(ctx, "acme", ref); !errors.Is(err, context.Canceled) {
		t.Errorf("Delete with a cancelled context: %v; want context.Canceled", err)
	}
	mustGet(t, cc, "acme", ref, []byte("x"))
}
