package redisstore

import (
	"strings"
	"testing"
	"time"
)

func TestClaimTime(t *testing.T) {
	at := time.Date(2030, 1, 1, 0, 0, 0, 5, time.UTC)
	for entry, want := range map[string]time.Time{
		lp("w1") + lp("1893456000000000005") + itemRef("a", "1"): at,
		"":          {},
		"2:w1":      {},
		"2:w13:abc": {},
	} {
		if got := claimTime(entry); !got.Equal(want) {
			t.Errorf("claimTime(%q) = %v; want %v", entry, got, want)
		}
	}
}

func TestDescribeOld(t *testing.T) {
	got := describeOld([]oldLayoutQueue{{"jobs", 12}, {"mail", 1}})
	if got != `queue "jobs" (12 keys) and queue "mail" (1 key)` {
		t.Errorf("two queues: %s", got)
	}
	var many []oldLayoutQueue
	for _, n := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		many = append(many, oldLayoutQueue{n, 2})
	}
	if got := describeOld(many); !strings.HasSuffix(got, `queue "e" (2 keys) and 2 more queues`) {
		t.Errorf("seven queues: %s", got)
	}
}
