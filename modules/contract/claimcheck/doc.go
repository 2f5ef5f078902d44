// Package claimcheck keeps payloads that are too large to travel inside a
// queue item out of line, and puts them back when the item is claimed.
//
// A queue caps what an item may carry (contract.DefaultMaxValueBytes, 256
// KiB, unless the backing is configured otherwise), because a queue that
// moves megabytes on every claim, heartbeat and settle stops being fast.
// The claim-check pattern stores the bytes elsewhere and lets the item
// carry only a [contract.Ref] to them.
//
// # Stores
//
// Two [contract.ClaimCheck] implementations live here:
//
//   - [Memory] keeps blobs in the process: tests, development, the demo.
//   - [Dir] keeps one file per blob under a directory, one subfolder per
//     tenant, written to a temporary file and renamed into place so a
//     reader never sees half a blob. It suits one host; blobs survive a
//     restart.
//
// Module pgstore adds a PostgreSQL table, usable from a Redis deployment
// too; S3 or GCS plug in through the same three methods. Package
// claimchecktest is the suite every implementation passes.
//
// # Wrapping a queue
//
// [Wrap] turns any [contract.WorkQueue] into one that offloads payloads
// above a threshold on Enqueue and restores them on Claim. The stored item
// keeps an empty payload and the reference in its metadata under
// [MetadataKey], so the dashboard and the dead-letter pages show the
// reference, never the bytes; so do the item's history, the finished
// listing and Find, over a queue that keeps history. Completing an item
// or purging its dead letter deletes the blob (a completed item kept for
// the record keeps its reference and size, not the bytes). A blob that has gone missing is reported on Claim as a
// [*MissingBlobError], never handed to a worker as an empty payload.
//
// Give every user of the queue the wrapped one — workers, and the
// dashboard that requeues and purges dead letters — so that every
// completion and purge passes through the code that deletes blobs; a
// purge made on the bare queue orphans the blobs of what it removed.
//
// The wrapper errs on the side of keeping bytes: whenever it cannot tell
// whether an item still needs its blob, it leaves the blob in place. A
// crash at the wrong moment can orphan a blob; it cannot lose a payload
// that a live item still refers to.
package claimcheck
