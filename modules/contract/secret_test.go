package contract

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

func TestSecretNeverPrints(t *testing.T) {
	const pw = "hunter2"
	s := Secret("postgres://adk:" + pw + "@db:5432/adk")
	type holder struct {
		DSN Secret
	}
	var logs strings.Builder
	slog.New(slog.NewTextHandler(&logs, nil)).Info("open", "dsn", s, "cfg", holder{s})
	js, err := json.Marshal(holder{s})
	if err != nil {
		t.Fatal(err)
	}
	text, _ := s.MarshalText()
	outputs := map[string]string{
		"%v": fmt.Sprintf("%v", s), "%s": fmt.Sprintf("%s", s), "%q": fmt.Sprintf("%q", s),
		"%#v": fmt.Sprintf("%#v", s), "%x": fmt.Sprintf("%x", s), "%+v struct": fmt.Sprintf("%+v", holder{s}),
		"%#v struct": fmt.Sprintf("%#v", holder{s}), "String": s.String(), "json": string(js),
		"text": string(text), "slog": logs.String(), "error": fmt.Errorf("connect %v: refused", s).Error(),
	}
	for how, out := range outputs {
		if strings.Contains(out, pw) || !strings.Contains(out, "[redacted]") {
			t.Errorf("%s printed %q", how, out)
		}
	}
	if s.Reveal() != string(s) || !s.IsSet() || Secret("").IsSet() {
		t.Fatal("Reveal/IsSet do not report the value")
	}
}
