package integration

import "sync"

// stops are the shared servers' shutdowns, run after every test.
var (
	stopsMu sync.Mutex
	stops   []func()
)

func atExit(f func()) {
	stopsMu.Lock()
	stops = append(stops, f)
	stopsMu.Unlock()
}

func stopShared() {
	stopsMu.Lock()
	defer stopsMu.Unlock()
	for i := len(stops) - 1; i >= 0; i-- {
		stops[i]()
	}
	stops = nil
}
