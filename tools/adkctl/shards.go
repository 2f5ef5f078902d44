package main

import (
	"context"
	"fmt"
	"strconv"

	"github.com/adkit/adk/modules/contract"
)

const shardsHelp = `usage: adkctl shards [--queue NAME] [flags]

How a queue spread over shards (redisstore Settings.Shards above one, on a
Redis Cluster) is spread: per shard the master that holds it, its hash
slot, its tenants, queued and leased items, and items claimed per second
over the last minute. A queue in one piece prints one line saying so.
Name the deployment's shards with --redis-shards (and its cluster with
--redis-cluster), or the shards read are not the ones it writes.

example:
  adkctl shards --queue agent --redis-cluster --redis-shards 3
`

// shardRow is one shard of `adkctl shards --json`.
type shardRow struct {
	Shard     int     `json:"shard"`
	Node      string  `json:"node"`
	Slot      int     `json:"slot"`
	Tenants   int     `json:"tenants"`
	Queued    int     `json:"queued"`
	Leased    int     `json:"leased"`
	ClaimRate float64 `json:"claims_per_second"`
}

// shardsOut is `adkctl shards --json`; Sharded is false (and Shards
// empty) for a queue in one piece.
type shardsOut struct {
	Queue   string     `json:"queue"`
	Sharded bool       `json:"sharded"`
	Shards  []shardRow `json:"shards"`
}

func (a *app) shards(ctx context.Context, args []string) int {
	c := a.command("shards", shardsHelp, true)
	if code, done := c.parse(args); done {
		return code
	}
	return c.exec(ctx, false, func(ctx context.Context) error {
		out := shardsOut{Queue: c.queue, Shards: []shardRow{}}
		if sr, ok := contract.AsShardReporter(c.b.Queue); ok {
			ss, err := sr.Shards(ctx, c.queue)
			if err != nil {
				return err
			}
			for _, s := range ss {
				out.Shards = append(out.Shards, shardRow{Shard: s.Shard, Node: s.Node, Slot: s.Slot, Tenants: s.Tenants,
					Queued: s.Queued, Leased: s.Leased, ClaimRate: s.ClaimRate})
			}
			out.Sharded = len(out.Shards) > 1
		}
		if c.json {
			return c.emit(out)
		}
		if !out.Sharded {
			fmt.Fprintf(c.stdout, "queue %s is not sharded: the %s backing keeps it in one piece (a sharded deployment: pass its --redis-shards)\n",
				quoteIfNeeded(clean(c.queue)), c.b.Name)
			return nil
		}
		tw := c.table("SHARD", "NODE", "SLOT", "TENANTS", "QUEUED", "LEASED", "CLAIMS/S")
		for _, s := range out.Shards {
			slot := "-"
			if s.Slot >= 0 {
				slot = strconv.Itoa(s.Slot)
			}
			node := s.Node
			if node == "" {
				node = "?"
			}
			row(tw, strconv.Itoa(s.Shard), clean(node), slot, strconv.Itoa(s.Tenants), strconv.Itoa(s.Queued), strconv.Itoa(s.Leased),
				strconv.FormatFloat(s.ClaimRate, 'f', 1, 64))
		}
		return tw.Flush()
	})
}
