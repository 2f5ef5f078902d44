// Package servers starts the private Redis and PostgreSQL servers the fault
// suite breaks on purpose, on free loopback ports in temporary directories,
// and prepares isolated namespaces and schemas on any server.
package servers

import (
	"fmt"
	"net"
	"os"
	"os/user"
	"strconv"
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

// postgresDir makes a temporary directory the postgres user owns, for a
// server that refuses to run as root (PostgreSQL, PgBouncer), and
// returns it with that user's ids.
func postgresDir(prefix string) (dir string, uid, gid int, err error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		return "", 0, 0, fmt.Errorf("the servers that refuse root run as the postgres user here: %w", err)
	}
	uid, _ = strconv.Atoi(u.Uid)
	gid, _ = strconv.Atoi(u.Gid)
	if dir, err = os.MkdirTemp("", prefix); err != nil {
		return "", 0, 0, err
	}
	if err := os.Chown(dir, uid, gid); err != nil {
		os.RemoveAll(dir)
		return "", 0, 0, fmt.Errorf("chown %s to postgres (run the integration lane as root): %w", dir, err)
	}
	return dir, uid, gid, nil
}
