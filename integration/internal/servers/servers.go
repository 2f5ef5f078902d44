// Package servers starts the private Redis and PostgreSQL servers the fault
// suite breaks on purpose, on free loopback ports in temporary directories,
// and prepares isolated namespaces and schemas on any server.
package servers

import (
	"net"
	"testing"
)

// FreePort returns a loopback TCP port nobody listens on right now.
func FreePort(t testing.TB) int {
	t.Helper()
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
