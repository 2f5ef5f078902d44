package integration

import (
	"strings"
	"testing"
)

func TestChooseServer(t *testing.T) {
	yes := func() bool { return true }
	no := func() bool { return false }
	tests := []struct {
		name    string
		env     string
		docker  func() bool
		want    source
		wantErr string
	}{
		{"variable wins over docker", "redis://127.0.0.1:6379/0", yes, fromEnv, ""},
		{"variable without docker", "redis://127.0.0.1:6379/0", no, fromEnv, ""},
		{"docker when unset", "", yes, fromContainer, ""},
		{"neither fails naming the variable", "", no, 0, "set ADK_TEST_REDIS_URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := choose(tt.env, tt.docker, RedisEnv, "Redis")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || strings.Contains(err.Error(), "\n") {
					t.Fatalf("err = %v, want one line containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("choose = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func TestDockerNotConsultedWhenVariableSet(t *testing.T) {
	called := false
	if _, err := choose("x", func() bool { called = true; return false }, PostgresEnv, "PostgreSQL"); err != nil || called {
		t.Fatalf("choose consulted docker (%v) or failed (%v) although the variable is set", called, err)
	}
}
