package view

// ShardRow is one shard of a queue spread over several: where it lives
// and what it holds.
type ShardRow struct {
	Shard int `json:"shard"`
	// Node is the server holding the shard (host:port), "" when the
	// backing does not say; Slot its cluster hash slot, -1 when none.
	Node    string `json:"node"`
	Slot    int    `json:"slot"`
	Tenants int    `json:"tenants"`
	Queued  int    `json:"queued"`
	Leased  int    `json:"leased"`
	// ClaimRate is claims per second over the last minute.
	ClaimRate float64 `json:"claims_per_second"`
}

// ShardTotals are a queue's shards summed. A tenant lives on one shard,
// so Tenants is the queue's tenants with queued or leased items.
type ShardTotals struct {
	Tenants   int     `json:"tenants"`
	Queued    int     `json:"queued"`
	Leased    int     `json:"leased"`
	ClaimRate float64 `json:"claims_per_second"`
}

// ShardsPanel is the shards section of the queue page. Count is how many
// shards the queue has. Rows and Total are left out for a token that
// does not see every tenant of the queue (a shard's numbers sum every
// tenant on it); Partial then says why. Error is the backing's refusal
// to report, shown in place of the rows.
type ShardsPanel struct {
	Count   int          `json:"count"`
	Rows    []ShardRow   `json:"rows,omitempty"`
	Total   *ShardTotals `json:"total,omitempty"`
	Partial string       `json:"partial,omitempty"`
	Error   string       `json:"error,omitempty"`
}

// Shards is the JSON twin of the queue page's shards section. Sharded is
// true when the queue's backing spreads it over more than one shard; the
// rest is filled only then.
type Shards struct {
	Queue   string `json:"queue"`
	Sharded bool   `json:"sharded"`
	ShardsPanel
}

// slotText is a shard's slot as the table shows it.
func slotText(slot int) string {
	if slot < 0 {
		return "—"
	}
	return itoa(slot)
}

// nodeText is a shard's server as the table shows it.
func nodeText(node string) string {
	if node == "" {
		return "—"
	}
	return node
}
