package claimcheck

import (
	"context"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/adkit/adk/modules/contract"
)

// Dir is a [contract.ClaimCheck] that keeps each blob in a file under a
// root directory, one subfolder per tenant. It is safe for concurrent use,
// including by several processes on the same host sharing the directory.
//
// Layout: <root>/<tenant folder>/<ref>. The tenant folder never contains
// the raw tenant name (a tenant may be called "../x" or "a/b"): tenants up
// to 100 bytes are spelled "t" followed by the unpadded lower-case base32
// of the name, which an operator can decode; longer ones are "h" followed by
// the hex SHA-256 of the name, which keeps the folder name inside every
// file system's limit. The two prefixes keep the spellings apart.
//
// Put writes to a temporary file (".put-*") in the tenant folder, syncs it
// and renames it into place, so a reader sees the whole blob or none. A
// ".put-*" file left behind by a crash is garbage and may be deleted.
type Dir struct {
	root string
}

var _ contract.ClaimCheck = (*Dir)(nil)

// maxReadableTenant is the longest tenant spelled with reversible base32:
// 100 bytes become 160 characters, well below the usual 255-byte limit.
const maxReadableTenant = 100

var tenantEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// NewDir returns a store rooted at path, creating the directory (mode 0700)
// if it does not exist.
func NewDir(path string) (*Dir, error) {
	if path == "" {
		return nil, &contract.ValidationError{Field: "path", Problem: "is empty; give the directory to keep blobs in"}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("claimcheck: directory %q: %w", path, err)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("claimcheck: create directory: %w", err)
	}
	st, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("claimcheck: directory: %w", err)
	}
	if !st.IsDir() {
		return nil, &contract.ValidationError{Field: "path", Problem: fmt.Sprintf("%q is not a directory", abs)}
	}
	return &Dir{root: abs}, nil
}

// Root returns the directory the store keeps its blobs under.
func (d *Dir) Root() string { return d.root }

// tenantFolder returns the folder name for a tenant (see Dir).
func tenantFolder(tenant string) string {
	if len(tenant) <= maxReadableTenant {
		return "t" + strings.ToLower(tenantEncoding.EncodeToString([]byte(tenant)))
	}
	sum := sha256.Sum256([]byte(tenant))
	return "h" + hex.EncodeToString(sum[:])
}

func (d *Dir) blobPath(tenant string, ref contract.Ref) string {
	return filepath.Join(d.root, tenantFolder(tenant), string(ref))
}

// Put writes data to a new file in the tenant's folder and returns its
// reference.
func (d *Dir) Put(ctx context.Context, tenant string, data []byte) (contract.Ref, error) {
	if err := check(ctx, tenant); err != nil {
		return "", err
	}
	dir := filepath.Join(d.root, tenantFolder(tenant))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("claimcheck: tenant folder: %w", err)
	}
	ref := newRef()
	if err := writeAtomic(dir, string(ref), data); err != nil {
		return "", fmt.Errorf("claimcheck: put blob for tenant %q: %w", tenant, err)
	}
	return ref, nil
}

// writeAtomic writes data to dir/name through a synced temporary file and a
// rename, then syncs the folder so the new name survives a power cut.
func writeAtomic(dir, name string, data []byte) (err error) {
	f, err := os.CreateTemp(dir, ".put-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	if err = f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		return err
	}
	// Best effort: some platforms cannot sync a directory, and the blob
	// is already complete under its name.
	if df, derr := os.Open(dir); derr == nil {
		_ = df.Sync()
		_ = df.Close()
	}
	return nil
}

// Get reads the tenant's blob, or returns an error wrapping
// contract.ErrNotFound.
func (d *Dir) Get(ctx context.Context, tenant string, ref contract.Ref) ([]byte, error) {
	if err := check(ctx, tenant); err != nil {
		return nil, err
	}
	if err := validateRef(ref); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(d.blobPath(tenant, ref))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, notFound(tenant, ref)
	}
	if err != nil {
		return nil, fmt.Errorf("claimcheck: get blob %q of tenant %q: %w", ref, tenant, err)
	}
	return b, nil
}

// Delete removes the tenant's blob; a missing blob is not an error. The
// tenant folder stays: removing it would race with a concurrent Put.
func (d *Dir) Delete(ctx context.Context, tenant string, ref contract.Ref) error {
	if err := check(ctx, tenant); err != nil {
		return err
	}
	if err := validateRef(ref); err != nil {
		return err
	}
	err := os.Remove(d.blobPath(tenant, ref))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("claimcheck: delete blob %q of tenant %q: %w", ref, tenant, err)
	}
	return nil
}
