package redisstore

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// FunctionLibraries returns the names of this release's Redis function
// libraries (adk_<script>_<hash>, one per script), sorted. A server holds
// those a call of this release has needed so far.
func FunctionLibraries() []string {
	out := make([]string, 0, len(allScripts))
	for _, sc := range allScripts {
		out = append(out, sc.fn)
	}
	slices.Sort(out)
	return out
}

// FunctionsReport is what PruneFunctions found on one server.
type FunctionsReport struct {
	Server  string   // the server's address
	Current []string // libraries of this release loaded there
	Stale   []string // libraries of other releases (their names differ in the hash)
	Deleted bool     // the stale libraries were deleted
}

// adkLibrary matches the names this package gives its libraries.
var adkLibrary = regexp.MustCompile(`^adk_[a-z_]+_[0-9a-f]{16}$`)

// PruneFunctions lists the adk function libraries on the server the
// client reaches (every master of a cluster, every shard of a ring):
// those of this release and those of others, which an upgrade leaves
// behind. With apply it deletes the others (FUNCTION DELETE). That is
// safe while processes of another release still run: the next call of
// one finds its function missing and loads it again. Libraries whose
// names are not adk's are never listed or touched.
func PruneFunctions(ctx context.Context, c redis.UniversalClient, apply bool) ([]FunctionsReport, error) {
	current := map[string]bool{}
	for _, n := range FunctionLibraries() {
		current[n] = true
	}
	var (
		mu  sync.Mutex
		out []FunctionsReport
	)
	prune := func(ctx context.Context, n *redis.Client) error {
		libs, err := n.FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: "adk_*"}).Result()
		if err != nil {
			return err
		}
		r := FunctionsReport{Server: n.Options().Addr, Current: []string{}, Stale: []string{}}
		for _, l := range libs {
			switch {
			case !adkLibrary.MatchString(l.Name):
			case current[l.Name]:
				r.Current = append(r.Current, l.Name)
			default:
				r.Stale = append(r.Stale, l.Name)
			}
		}
		slices.Sort(r.Current)
		slices.Sort(r.Stale)
		if apply {
			for _, name := range r.Stale {
				// Gone already (another prune, a flush) is as good.
				if err := n.FunctionDelete(ctx, name).Err(); err != nil && err.Error() != "ERR Library not found" {
					return err
				}
			}
			r.Deleted = len(r.Stale) > 0
		}
		mu.Lock()
		out = append(out, r)
		mu.Unlock()
		return nil
	}
	err := eachServer(ctx, c, prune)
	slices.SortFunc(out, func(a, b FunctionsReport) int { return strings.Compare(a.Server, b.Server) })
	return out, err
}

// Functions lists the adk function libraries on the servers the queue's
// client reaches: PruneFunctions without deleting anything.
func (q *RedisWorkQueue) Functions(ctx context.Context) ([]FunctionsReport, error) {
	return PruneFunctions(ctx, q.d.client, false)
}

// PruneFunctions deletes the function libraries of other releases from
// the servers the queue's client reaches (see the package function).
func (q *RedisWorkQueue) PruneFunctions(ctx context.Context) ([]FunctionsReport, error) {
	return PruneFunctions(ctx, q.d.client, true)
}
