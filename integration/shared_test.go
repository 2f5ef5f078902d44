package integration

import "sync"

// stops are the shared servers' shutdowns, run after every test.
var (
	stopsMu sync.Mutex
	stops   []func()
)

func stopShared() {
	stopsMu.Lock()
	defer stopsMu.Unlock()
	for i := len(stops) - 1; i >= 0; i-- {
		stops[i]()
	}
	stops = nil
}
