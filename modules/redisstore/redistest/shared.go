package redistest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/adkit/adk/modules/contract/contracttest"
)

// EnvURL names the variable holding the shared test server's URL, e.g.
// redis://127.0.0.1:6379/0.
const EnvURL = "ADK_TEST_REDIS_URL"

// URL returns the shared test server's URL, failing the test, with the
// fix, when the variable is not set.
func URL(t testing.TB) string {
	t.Helper()
	return contracttest.Env(t, EnvURL, "redis://127.0.0.1:6379/0", "the Redis integration tests")
}

// Client returns a client of the shared test server, closed when the
// test ends.
func Client(t testing.TB) *redis.Client {
	t.Helper()
	opt, err := redis.ParseURL(URL(t))
	if err != nil {
		t.Fatalf("%s: %v", EnvURL, err)
	}
	c := redis.NewClient(opt)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Namespace returns a key namespace (redisstore's Settings.Namespace) no
// other test uses, and deletes every key under it when the test ends.
func Namespace(t testing.TB, c redis.UniversalClient) string {
	t.Helper()
	ns := "adktest-" + randomHex()
	t.Cleanup(func() { DeleteNamespace(t, c, ns) })
	return ns
}

func randomHex() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// DeleteNamespace removes the keys of namespace ns, failing the test on
// error.
func DeleteNamespace(t testing.TB, c redis.UniversalClient, ns string) {
	t.Helper()
	if err := Purge(context.Background(), c, ns); err != nil {
		t.Errorf("cleaning namespace %s: %v", ns, err)
	}
}

// namespacePatterns are the SCAN patterns of a namespace's keys: the
// state keys, the queue's hash-tagged keys, and those of each shard of a
// sharded queue ({ns:queue:<shard>.<k>}).
func namespacePatterns(ns string) []string {
	return []string{ns + ":state:*", "{" + ns + ":queue}:*", "{" + ns + ":queue:*}:*"}
}

// Purge removes the keys of namespace ns (state and queue keys, sharded
// or not), scanning
// every master of a cluster.
func Purge(ctx context.Context, c redis.UniversalClient, ns string) error {
	for _, pattern := range namespacePatterns(ns) {
		err := forEachNode(ctx, c, func(ctx context.Context, node redis.Cmdable) error {
			return deletePattern(ctx, node, pattern)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// Keys returns every key under namespace ns, from every master of a
// cluster.
func Keys(ctx context.Context, c redis.UniversalClient, ns string) ([]string, error) {
	var mu sync.Mutex
	var out []string
	for _, pattern := range namespacePatterns(ns) {
		err := forEachNode(ctx, c, func(ctx context.Context, node redis.Cmdable) error {
			it := node.Scan(ctx, 0, globQuote(pattern), 1000).Iterator()
			for it.Next(ctx) {
				mu.Lock()
				out = append(out, it.Val())
				mu.Unlock()
			}
			return it.Err()
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func forEachNode(ctx context.Context, c redis.UniversalClient, fn func(context.Context, redis.Cmdable) error) error {
	if cc, ok := c.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error { return fn(ctx, n) })
	}
	return fn(ctx, c)
}

// globQuote escapes the glob characters a namespace may hold, so SCAN
// matches it literally (the braces of the hash tag are not special).
func globQuote(p string) string {
	return strings.NewReplacer("[", `\[`, "]", `\]`, "?", `\?`).Replace(p)
}

// deletePattern deletes the keys matching pattern.
func deletePattern(ctx context.Context, c redis.Cmdable, pattern string) error {
	it := c.Scan(ctx, 0, globQuote(pattern), 1000).Iterator()
	var batch []string
	for it.Next(ctx) {
		batch = append(batch, it.Val())
		if len(batch) == 500 {
			if err := unlink(ctx, c, batch); err != nil {
				return err
			}
			batch = batch[:0]
		}
	}
	if err := it.Err(); err != nil {
		return err
	}
	return unlink(ctx, c, batch)
}

func unlink(ctx context.Context, c redis.Cmdable, keys []string) error {
	// Keys of one namespace may span slots (state keys tag the tenant), so
	// delete one at a time through a pipeline rather than in one UNLINK.
	if len(keys) == 0 {
		return nil
	}
	pipe := c.Pipeline()
	for _, k := range keys {
		pipe.Unlink(ctx, k)
	}
	_, err := pipe.Exec(ctx)
	return err
}

// FreePort returns a loopback TCP port nobody listens on right now.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
