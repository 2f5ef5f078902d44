package claimcheck

import (
	"context"
	"sync"

	"github.com/adkit/adk/modules/contract"
)

// Memory is a [contract.ClaimCheck] that keeps blobs in the process. It is
// safe for concurrent use; blobs are copied in and out, so callers may reuse
// their slices.
type Memory struct {
	mu    sync.RWMutex
	blobs map[string]map[contract.Ref][]byte // tenant → ref → bytes
}

var _ contract.ClaimCheck = (*Memory)(nil)

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory {
	return &Memory{blobs: make(map[string]map[contract.Ref][]byte)}
}

// Put stores a copy of data for the tenant.
func (m *Memory) Put(ctx context.Context, tenant string, data []byte) (contract.Ref, error) {
	if err := check(ctx, tenant); err != nil {
		return "", err
	}
	ref := newRef()
	cp := append([]byte{}, data...)
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.blobs[tenant]
	if t == nil {
		t = make(map[contract.Ref][]byte)
		m.blobs[tenant] = t
	}
	t[ref] = cp
	return ref, nil
}

// Get returns a copy of the tenant's blob, or an error wrapping
// contract.ErrNotFound.
func (m *Memory) Get(ctx context.Context, tenant string, ref contract.Ref) ([]byte, error) {
	if err := check(ctx, tenant); err != nil {
		return nil, err
	}
	if err := validateRef(ref); err != nil {
		return nil, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	b, ok := m.blobs[tenant][ref]
	if !ok {
		return nil, notFound(tenant, ref)
	}
	return append([]byte{}, b...), nil
}

// Delete removes the tenant's blob; a missing blob is not an error.
func (m *Memory) Delete(ctx context.Context, tenant string, ref contract.Ref) error {
	if err := check(ctx, tenant); err != nil {
		return err
	}
	if err := validateRef(ref); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if t := m.blobs[tenant]; t != nil {
		delete(t, ref)
		if len(t) == 0 {
			delete(m.blobs, tenant)
		}
	}
	return nil
}

// Len returns how many blobs the store holds across all tenants. Tests use
// it to check that nothing was orphaned.
func (m *Memory) Len() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	n := 0
	for _, t := range m.blobs {
		n += len(t)
	}
	return n
}
