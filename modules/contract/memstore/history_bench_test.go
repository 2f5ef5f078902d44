package memstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/contract/contracttest"
	"github.com/adkit/adk/modules/contract/memstore"
)

// BenchmarkHistory claims and completes batches of 10, as
// BenchmarkClaimComplete does, on a queue without retention and on one
// that keeps its finished items and records the latest 50 events of
// each; the ratio of the two is what the history costs the claim path.
func BenchmarkHistory(b *testing.B) {
	for _, c := range []struct {
		name string
		ret  contract.Retention
	}{
		{"Off", contract.Retention{}},
		{"KeepEvents", contract.Retention{Age: 24 * time.Hour, Events: 50}},
	} {
		b.Run(c.name, func(b *testing.B) {
			s := memstore.New(contracttest.NewFakeClock(contracttest.FakeEpoch), memstore.Settings{})
			if err := s.SetRetention(context.Background(), contract.DefaultQueue, c.ret); err != nil {
				b.Fatal(err)
			}
			memstore.BenchClaimComplete(b, s, 10)
		})
	}
}
