// Package policy decides what happens to a unit of work that failed: try it
// again at a later time, or give up and move it to the dead letter.
//
// A [Policy] is a plain value shared by every backing, so that an in-memory
// queue, a Redis queue and a PostgreSQL queue agree on when an item is
// poisonous. Delays grow exponentially from [Policy.BaseDelay], doubling per
// attempt up to [Policy.MaxDelay], and are spread with "full jitter": the
// actual delay is drawn uniformly from [0, backoff]. The random source is
// injectable ([Policy.Jitter]) so tests can pin it.
//
// An error wrapped with [Permanent] dead-letters its item at once, whatever
// the attempt count.
//
// The package is pure and depends on the standard library only.
package policy
