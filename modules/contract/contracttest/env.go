package contracttest

import (
	"os"
	"testing"
)

// Env returns the environment variable name, failing the test with the
// fix when it is empty: a test that needs a server says what to set
// rather than skip. example is a value to show in the message, and what
// the tests the variable serves ("the Redis integration tests").
func Env(t testing.TB, name, example, what string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		t.Fatal("set " + name + " (e.g. " + example + ") to run " + what)
	}
	return v
}
