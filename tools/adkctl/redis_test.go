package main

import (
	"strings"
	"testing"
)

// The command line of redis migrate-layout, refused before any server is
// reached.
func TestMigrateLayoutUsage(t *testing.T) {
	redisEnv := map[string]string{"ADK_REDIS_DSN": "redis://127.0.0.1:1/0"}
	for _, tc := range []struct {
		env  map[string]string
		args []string
		code int
		want string
	}{
		{nil, []string{"redis"}, exitUsage, "usage: adkctl redis migrate-layout"},
		{nil, []string{"redis", "frob"}, exitUsage, "the commands are migrate-layout and functions"},
		{nil, []string{"redis", "migrate-layout"}, exitUsage, "ADK_REDIS_DSN"},
		{map[string]string{"ADK_POSTGRES_DSN": "postgres://u:hunter2@127.0.0.1:1/x"}, []string{"redis", "migrate-layout"}, exitUsage, "works on the Redis backing"},
		{redisEnv, []string{"redis", "migrate-layout", "--namespace", "a", "--redis-namespace", "b"}, exitUsage, "differ"},
		{redisEnv, []string{"redis", "migrate-layout", "extra"}, exitUsage, "unexpected argument"},
	} {
		code, out, errOut := runArgs(t, tc.env, tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("adkctl %v: exit %d, stderr %q; want exit %d mentioning %q", tc.args, code, errOut, tc.code, tc.want)
		}
		if strings.Contains(out+errOut, "hunter2") {
			t.Errorf("adkctl %v printed the password", tc.args)
		}
	}
	code, out, _ := runArgs(t, nil, "redis", "migrate-layout", "--help")
	for _, want := range []string{"Stop every worker", "-yes", "-force", "(default 1h0m0s)", "run again"} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Errorf("migrate-layout --help: exit %d, missing %q", code, want)
		}
	}
	if code, out, _ := runArgs(t, nil, "--help"); code != exitOK || !strings.Contains(out, "redis migrate-layout") {
		t.Errorf("adkctl --help does not list redis migrate-layout")
	}
}
