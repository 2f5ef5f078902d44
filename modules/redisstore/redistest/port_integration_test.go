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

// TestStartMovesOffATakenBusPort starts a cluster node whose bus port is
// taken: the node comes up on another data port and another bus port.
func TestStartMovesOffATakenBusPort(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	taken := l.Addr().(*net.TCPAddr).Port
	s := newServer(t, []string{"--appendonly", "no", "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"})
	s.bus = taken
	first := s.Port
	s.Start()
	t.Cleanup(s.Kill)
	if s.bus == taken || s.Port == first {
		t.Fatalf("started with bus port %d and port %d; want both moved off %d and %d", s.bus, s.Port, taken, first)
	}
	if pid := serverPID(s.Addr()); pid != s.cmd.Process.Pid {
		t.Fatalf("the server on %s has pid %d; want %d, the started process", s.Addr(), pid, s.cmd.Process.Pid)
	}
}
