//go:build integration

package redistest

import (
	"net"
	"testing"
)

// TestStartMovesOffATakenPort starts servers on ports already taken, once
// by a plain listener and once by another redis-server (which answers
// PING as the new one would): each new server comes up on another port,
// and the process answering there is its own.
func TestStartMovesOffATakenPort(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	other := StartServer(t)
	for name, port := range map[string]int{"listener": l.Addr().(*net.TCPAddr).Port, "redis-server": other.Port} {
		t.Run(name, func(t *testing.T) {
			s := newServer(t, []string{"--appendonly", "no"})
			s.Port = port
			s.Start()
			t.Cleanup(s.Kill)
			if s.Port == port {
				t.Fatalf("started on the taken port %d", port)
			}
			if pid := serverPID(s.Addr()); pid != s.cmd.Process.Pid {
				t.Fatalf("the server on %s has pid %d; want %d, the started process", s.Addr(), pid, s.cmd.Process.Pid)
			}
		})
	}
}
