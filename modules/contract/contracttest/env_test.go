package contracttest_test

import (
	"testing"

	"github.com/adkit/adk/modules/contract/contracttest"
)

func TestEnv(t *testing.T) {
	t.Setenv("ADK_TEST_ENV_PROBE", "redis://127.0.0.1:6379/0")
	if got := contracttest.Env(t, "ADK_TEST_ENV_PROBE", "x", "this test"); got != "redis://127.0.0.1:6379/0" {
		t.Fatalf("Env = %q", got)
	}
	t.Setenv("ADK_TEST_ENV_PROBE", "")
	f := &fatalRecorder{TB: t}
	func() {
		defer func() { _ = recover() }()
		contracttest.Env(f, "ADK_TEST_ENV_PROBE", "redis://127.0.0.1:6379/0", "the Redis integration tests")
	}()
	if want := "set ADK_TEST_ENV_PROBE (e.g. redis://127.0.0.1:6379/0) to run the Redis integration tests"; f.msg != want {
		t.Fatalf("Env of an empty variable failed with %q, want %q", f.msg, want)
	}
}

// fatalRecorder keeps what Fatal was called with, and stops the caller.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}

func (f *fatalRecorder) Fatal(args ...any) {
	if len(args) == 1 {
		f.msg, _ = args[0].(string)
	}
	panic("fatal")
}
