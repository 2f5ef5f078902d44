package claimcheck_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/claimcheck"
	"github.com/adkit/adk/modules/contract/claimcheck/claimchecktest"
)

func TestMemoryConformance(t *testing.T) {
	claimchecktest.ClaimCheck(t, func(t *testing.T) contract.ClaimCheck {
		return claimcheck.NewMemory()
	})
}

func TestDirConformance(t *testing.T) {
	claimchecktest.ClaimCheck(t, func(t *testing.T) contract.ClaimCheck {
		d, err := claimcheck.NewDir(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return d
	})
}

// Every file the store writes stays under its root, whatever the tenant is
// called, and no folder carries the raw tenant name.
func TestDirTenantsStayInside(t *testing.T) {
	parent := t.TempDir()
	root := filepath.Join(parent, "blobs")
	d, err := claimcheck.NewDir(root)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tenant := range []string{"../x", "a/b", "..", ".", "/abs", `..\y`, strings.Repeat("z", 300)} {
		if _, err := d.Put(ctx, tenant, []byte("x")); err != nil {
			t.Fatalf("Put(%q): %v", tenant, err)
		}
	}
	entries, err := os.ReadDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "blobs" {
		t.Fatalf("the parent of the root holds %v; a tenant escaped the root", entries)
	}
	err = filepath.WalkDir(root, func(path string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if depth := len(strings.Split(rel, string(filepath.Separator))); rel != "." && depth > 2 {
			t.Errorf("%s is %d levels deep; want <root>/<tenant>/<ref>", rel, depth)
		}
		if e.IsDir() && path != root && !strings.HasPrefix(e.Name(), "t") && !strings.HasPrefix(e.Name(), "h") {
			t.Errorf("tenant folder %q is not an encoded name", e.Name())
		}
		if len(e.Name()) > 200 {
			t.Errorf("name %q is %d bytes; file systems cap names near 255", e.Name(), len(e.Name()))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A reference that walks out of the tenant folder into another tenant's is
// refused before the file system sees it.
func TestDirRefTraversalRefused(t *testing.T) {
	root := t.TempDir()
	d, err := claimcheck.NewDir(root)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ref, err := d.Put(ctx, "victim", []byte("victim's bytes"))
	if err != nil {
		t.Fatal(err)
	}
	folders, _ := os.ReadDir(root)
	if len(folders) != 1 {
		t.Fatalf("want one tenant folder, got %v", folders)
	}
	hostile := contract.Ref("../" + folders[0].Name() + "/" + string(ref))
	if got, err := d.Get(ctx, "attacker", hostile); !errors.Is(err, contract.ErrInvalid) {
		t.Fatalf("Get(attacker, %q) = %q, %v; want a *contract.ValidationError", hostile, got, err)
	}
	if err := d.Delete(ctx, "attacker", hostile); !errors.Is(err, contract.ErrInvalid) {
		t.Fatalf("Delete(attacker, %q) = %v; want a *contract.ValidationError", hostile, err)
	}
	if _, err := d.Get(ctx, "victim", ref); err != nil {
		t.Fatalf("the victim's blob: %v", err)
	}
}

func TestNewDirRefusals(t *testing.T) {
	if _, err := claimcheck.NewDir(""); !errors.Is(err, contract.ErrInvalid) {
		t.Fatalf("NewDir(\"\"): %v; want a validation error", err)
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := claimcheck.NewDir(file); err == nil {
		t.Fatal("NewDir on a regular file succeeded")
	}
}

// Put leaves no temporary file behind, and blobs survive a new Dir on the
// same root (a restart).
func TestDirNoTempFilesAndReopen(t *testing.T) {
	root := t.TempDir()
	d, err := claimcheck.NewDir(root)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ref, err := d.Put(ctx, "acme", []byte("kept"))
	if err != nil {
		t.Fatal(err)
	}
	_ = filepath.WalkDir(root, func(path string, e os.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(e.Name(), ".put-") {
			t.Errorf("temporary file %s left behind", path)
		}
		return nil
	})
	d2, err := claimcheck.NewDir(root)
	if err != nil {
		t.Fatal(err)
	}
	got, err := d2.Get(ctx, "acme", ref)
	if err != nil || string(got) != "kept" {
		t.Fatalf("after reopening: %q, %v", got, err)
	}
}
