package claimcheck_test

import (
	"context"
	"testing"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/claimcheck"
)

func benchPutGet(b *testing.B, cc contract.ClaimCheck, size int) {
	ctx := context.Background()
	data := make([]byte, size)
	b.SetBytes(int64(size))
	b.ResetTimer()
	for b.Loop() {
		ref, err := cc.Put(ctx, "acme", data)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := cc.Get(ctx, "acme", ref); err != nil {
			b.Fatal(err)
		}
		if err := cc.Delete(ctx, "acme", ref); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMemoryPutGetDelete1MiB(b *testing.B) {
	benchPutGet(b, claimcheck.NewMemory(), 1<<20)
}

// The directory store syncs every blob, so this measures the disk's
// fsync rate as much as the code.
func BenchmarkDirPutGetDelete1MiB(b *testing.B) {
	d, err := claimcheck.NewDir(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	benchPutGet(b, d, 1<<20)
}
