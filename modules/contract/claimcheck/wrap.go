package claimcheck

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"strconv"
	"time"

	"github.com/adkit/adk/modules/contract"
	"github.com/adkit/adk/modules/policy"
)

// Metadata keys the wrapper reserves on the items it offloads. Enqueue
// refuses items that already carry either.
const (
	// MetadataKey holds the reference of the offloaded payload.
	MetadataKey = "adk-claim-check"
	// MetadataSizeKey holds the payload's length in bytes, so a dashboard
	// can say how large the hidden payload is without fetching it.
	MetadataSizeKey = "adk-claim-check-bytes"
)

// cleanupTimeout bounds the blob deletes that follow a settle, which run
// even when the caller's context has just been cancelled: the item is
// already gone, and giving up would only orphan its blob.
const cleanupTimeout = 10 * time.Second

// Queue is a WorkQueue whose large payloads travel behind a claim check.
// Build it with [Wrap]; it is safe for concurrent use when the queue and
// the store it wraps are.
type Queue struct {
	// Passthrough forwards the Inspector, Waker and StatsSource of the
	// inner queue, and reports its Capabilities; CompleteAndClaim is the
	// wrapper's own.
	contract.Passthrough
	inner     contract.WorkQueue
	cc        contract.ClaimCheck
	threshold int
}

// Wrap returns q with payloads longer than threshold bytes offloaded to cc
// on Enqueue and restored on Claim. A threshold of zero or less offloads
// every non-empty payload. Wrap panics if q or cc is nil.
//
// The returned queue has every optional method and reports the
// [contract.Capabilities] of q: ask [contract.AsWaker] and its siblings,
// not a type assertion, whether q wakes. The Inspector, Waker and
// StatsSource methods go to q untouched; CompleteAndClaim offloads and
// restores as Complete and Claim do, EnqueueReport offloads as Enqueue
// does, and the HistoryKeeper's reads (History, Finished, Find) show
// references as the Inspector's do. Its Unwrap method returns q.
//
// Offloaded items are stored with an empty payload and the reference under
// [MetadataKey]; handlers see the restored payload and that key. Each
// method's documentation says what it does with blobs.
func Wrap(q contract.WorkQueue, cc contract.ClaimCheck, threshold int) contract.WorkQueue {
	if q == nil || cc == nil {
		panic("claimcheck: Wrap needs a queue and a claim check")
	}
	return &Queue{Passthrough: contract.NewPassthrough(q), inner: q, cc: cc, threshold: max(threshold, 0)}
}

// Unwrap returns the queue Wrap was given.
func (w *Queue) Unwrap() contract.WorkQueue { return w.inner }

// refOf returns the claim-check reference an item carries, if any.
func refOf(it contract.Item) (contract.Ref, bool) {
	ref, ok := it.Metadata[MetadataKey]
	return contract.Ref(ref), ok
}

// strip returns the lease without the restored payload, so that the inner
// queue is never handed the bytes it was spared.
func strip(l contract.Lease) contract.Lease {
	if _, ok := refOf(l.Item); ok {
		l.Item.Payload = nil
	}
	return l
}

type offloaded struct {
	key   contract.ItemKey
	ref   contract.Ref
	index int // the item's place in the batch enqueued
}

// Enqueue stores every payload longer than the threshold in the claim
// check, then enqueues the items carrying only references. Items are
// validated first, so a refused batch writes no blob. An enqueue that is a
// no-op (the ID is already live) leaves no orphaned blob when the queue is
// an Inspector: the wrapper checks which reference the stored item carries
// and deletes its own when it is not that one.
func (w *Queue) Enqueue(ctx context.Context, items ...contract.Item) error {
	out, puts, err := w.offload(ctx, items)
	if err != nil {
		return err
	}
	err = w.inner.Enqueue(ctx, out...)
	if err != nil && refused(err) {
		w.deleteAll(ctx, puts)
		return err
	}
	// After success, or after an error that leaves the outcome open, keep
	// each blob its item still points at and drop the others.
	for _, p := range puts {
		w.dropIfUnreferenced(ctx, p)
	}
	return err
}

// EnqueueReport offloads the payloads longer than the threshold exactly
// as Enqueue does, then enqueues through the inner queue's
// HistoryKeeper and returns its report. The report says which items were
// duplicates, so their blobs are deleted at once, without asking the
// Inspector; the blobs of the items enqueued stay. On an error that
// leaves the outcome open it keeps or drops each blob as Enqueue does. A
// queue that keeps no history gets errors.ErrUnsupported, and no blob is
// written.
func (w *Queue) EnqueueReport(ctx context.Context, items ...contract.Item) ([]contract.EnqueueResult, error) {
	hk, ok := contract.AsHistoryKeeper(w.inner)
	if !ok {
		return nil, fmt.Errorf("claimcheck: the wrapped queue has no HistoryKeeper: %w", errors.ErrUnsupported)
	}
	out, puts, err := w.offload(ctx, items)
	if err != nil {
		return nil, err
	}
	res, err := hk.EnqueueReport(ctx, out...)
	switch {
	case err != nil && refused(err):
		w.deleteAll(ctx, puts)
		return res, err
	case err != nil || len(res) != len(items):
		for _, p := range puts {
			w.dropIfUnreferenced(ctx, p)
		}
		return res, err
	}
	var dups []offloaded
	for _, p := range puts {
		if res[p.index].Duplicate {
			dups = append(dups, p)
		}
	}
	w.deleteAll(ctx, dups)
	return res, nil
}

// offload validates items and stores every payload longer than the
// threshold, returning the items to enqueue (carrying references instead)
// and the blobs written. On an error it has deleted what it wrote.
func (w *Queue) offload(ctx context.Context, items []contract.Item) ([]contract.Item, []offloaded, error) {
	if err := contract.ValidateItems(items, math.MaxInt); err != nil {
		return nil, nil, err
	}
	for i, it := range items {
		for _, k := range []string{MetadataKey, MetadataSizeKey} {
			if _, ok := it.Metadata[k]; ok {
				return nil, nil, &contract.ValidationError{Field: fmt.Sprintf("items[%d].Metadata[%s]", i, k), Problem: "is reserved for the claim check; use another key"}
			}
		}
	}
	out := make([]contract.Item, len(items))
	var puts []offloaded
	for i, it := range items {
		out[i] = it
		if len(it.Payload) <= w.threshold {
			continue
		}
		ref, err := w.cc.Put(ctx, it.Tenant, it.Payload)
		if err != nil {
			w.deleteAll(ctx, puts)
			return nil, nil, fmt.Errorf("claimcheck: offload payload of item %q/%q: %w", it.Tenant, it.ID, err)
		}
		key := it.Key()
		key.Queue = contract.QueueName(key.Queue)
		puts = append(puts, offloaded{key: key, ref: ref, index: i})
		md := make(map[string]string, len(it.Metadata)+2)
		maps.Copy(md, it.Metadata)
		md[MetadataKey] = string(ref)
		md[MetadataSizeKey] = strconv.Itoa(len(it.Payload))
		out[i].Metadata = md
		out[i].Payload = nil
	}
	return out, puts, nil
}

// refused reports whether err says the queue wrote nothing for sure.
func refused(err error) bool {
	var tooLarge *contract.StatePersistenceError
	return errors.Is(err, contract.ErrInvalid) || (errors.As(err, &tooLarge) && tooLarge.Reason == contract.ReasonTooLarge)
}

func (w *Queue) deleteAll(ctx context.Context, puts []offloaded) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	for _, p := range puts {
		_ = w.cc.Delete(ctx, p.key.Tenant, p.ref)
	}
}

// dropIfUnreferenced deletes the blob unless the stored item refers to it.
// Without an Inspector, or when the lookup fails, it keeps the blob: an
// orphan costs space, a missing blob costs an item.
func (w *Queue) dropIfUnreferenced(ctx context.Context, p offloaded) error {
	if w.Inspector() == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	info, err := w.Inspector().Item(ctx, p.key)
	switch {
	case errors.Is(err, contract.ErrNotFound):
	case err != nil:
		return nil
	default:
		if ref, _ := refOf(info.Item); ref == p.ref {
			return nil
		}
	}
	if err := w.cc.Delete(ctx, p.key.Tenant, p.ref); err != nil {
		return &BlobCleanupError{Tenant: p.key.Tenant, Ref: p.ref, Err: err}
	}
	return nil
}

// Claim claims from the inner queue and restores each offloaded payload.
//
// An item whose blob cannot be read is not handed out. The wrapper fails
// its lease at once: a blob that is gone (ErrNotFound) can never be read,
// so the item goes straight to the dead letter (policy.Permanent), where an
// operator sees the reference in LastError and may restore the blob and
// requeue it; any other store error fails it for a retry per the queue's
// policy. Claim then returns the leases it could restore together with a
// non-nil error joining one [*MissingBlobError] per item it failed:
// callers process the leases they got even when err is not nil, as with
// io.Reader.
func (w *Queue) Claim(ctx context.Context, req contract.ClaimRequest) ([]contract.Lease, error) {
	leases, err := w.inner.Claim(ctx, req)
	return w.restore(ctx, leases, err)
}

// restore puts back the payloads of the claimed leases, failing those
// whose blob cannot be read (see Claim); err is the claim's own.
func (w *Queue) restore(ctx context.Context, leases []contract.Lease, err error) ([]contract.Lease, error) {
	if len(leases) == 0 {
		return leases, err
	}
	errs := []error{err}
	out := leases[:0]
	for _, l := range leases {
		ref, ok := refOf(l.Item)
		if !ok {
			out = append(out, l)
			continue
		}
		data, gerr := w.cc.Get(ctx, l.Item.Tenant, ref)
		if gerr == nil {
			l.Item.Payload = data
			out = append(out, l)
			continue
		}
		missing := &MissingBlobError{Key: l.Key(), Ref: ref, Err: gerr}
		cause := error(missing)
		if errors.Is(gerr, contract.ErrNotFound) {
			cause = policy.Permanent(missing)
		}
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		if _, ferr := w.inner.Fail(fctx, strip(l), cause); ferr != nil {
			errs = append(errs, fmt.Errorf("claimcheck: fail item %q/%q after its blob could not be read (its lease will expire instead): %w", l.Item.Tenant, l.Item.ID, ferr))
		}
		cancel()
		errs = append(errs, missing)
	}
	return out, errors.Join(errs...)
}

// Heartbeat extends the lease; the returned lease keeps the restored
// payload.
func (w *Queue) Heartbeat(ctx context.Context, lease contract.Lease, extend time.Duration) (contract.Lease, error) {
	nl, err := w.inner.Heartbeat(ctx, strip(lease), extend)
	if err == nil {
		if _, ok := refOf(nl.Item); ok {
			nl.Item.Payload = lease.Item.Payload
		}
	}
	return nl, err
}

// Complete completes the items, then deletes the blobs of those that
// completed. Items named in a *LeaseLostError keep their blobs (another
// worker holds them); on any other error the outcome is unknown and every
// blob is kept. Blobs that could not be deleted are reported as
// [*BlobCleanupError]s joined to the result; the items are complete all
// the same.
func (w *Queue) Complete(ctx context.Context, leases ...contract.Lease) error {
	err := w.inner.Complete(ctx, stripAll(leases)...)
	lost, known := lostOf(err)
	if !known {
		return err
	}
	return errors.Join(err, w.dropCompleted(ctx, leases, lost))
}

// CompleteAndClaim completes done and deletes their blobs as Complete
// does, and restores the payloads of the leases it claims as Claim does,
// in the inner queue's one round trip.
func (w *Queue) CompleteAndClaim(ctx context.Context, done []contract.Lease, req contract.ClaimRequest) ([]contract.Lease, error) {
	leases, err := w.Passthrough.CompleteAndClaim(ctx, stripAll(done), req)
	lost, known := lostOf(err)
	if !known && !errors.Is(err, contract.ErrEmpty) {
		return leases, err
	}
	cleanup := w.dropCompleted(ctx, done, lost)
	out, err := w.restore(ctx, leases, err)
	if cleanup == nil {
		return out, err
	}
	return out, errors.Join(err, cleanup)
}

func stripAll(leases []contract.Lease) []contract.Lease {
	stripped := make([]contract.Lease, len(leases))
	for i, l := range leases {
		stripped[i] = strip(l)
	}
	return stripped
}

// lostOf returns the items a settle's error names as lost, and whether the
// outcome of the others is known (nil or a *LeaseLostError).
func lostOf(err error) (map[contract.ItemKey]bool, bool) {
	lost := map[contract.ItemKey]bool{}
	if err == nil {
		return lost, true
	}
	var lle *contract.LeaseLostError
	if !errors.As(err, &lle) {
		return nil, false
	}
	for _, k := range lle.Items {
		lost[k] = true
	}
	return lost, true
}

// dropCompleted deletes the blobs of the leases that completed (all but
// the lost), returning the deletes that failed as joined
// *BlobCleanupErrors.
func (w *Queue) dropCompleted(ctx context.Context, leases []contract.Lease, lost map[contract.ItemKey]bool) error {
	var errs []error
	var dctx context.Context
	for _, l := range leases {
		ref, ok := refOf(l.Item)
		if !ok || lost[l.Key()] {
			continue
		}
		if dctx == nil {
			var cancel context.CancelFunc
			dctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
			defer cancel()
		}
		if derr := w.cc.Delete(dctx, l.Item.Tenant, ref); derr != nil {
			errs = append(errs, &BlobCleanupError{Tenant: l.Item.Tenant, Ref: ref, Err: derr})
		}
	}
	return errors.Join(errs...)
}

// Fail passes through; the item keeps its reference, so a retry or a
// requeue from the dead letter finds the blob again.
func (w *Queue) Fail(ctx context.Context, lease contract.Lease, cause error) (policy.Decision, error) {
	return w.inner.Fail(ctx, strip(lease), cause)
}

// Reap passes through; reaped items keep their references.
func (w *Queue) Reap(ctx context.Context, queue string) (int, error) {
	return w.inner.Reap(ctx, queue)
}

// DeadLetters passes through: the items show the reference under
// MetadataKey and an empty payload, never the bytes.
func (w *Queue) DeadLetters(ctx context.Context, q contract.DeadLetterQuery) (contract.ItemPage, error) {
	return w.inner.DeadLetters(ctx, q)
}

// History passes through, as DeadLetters does: the item shows the
// reference under MetadataKey and an empty payload, never the bytes. A
// completed item kept for the record has had its blob deleted by
// Complete; its reference and MetadataSizeKey remain as a record of what
// it carried.
func (w *Queue) History(ctx context.Context, key contract.ItemKey) (contract.History, error) {
	return w.Passthrough.History(ctx, key)
}

// Finished passes through: the items show their references and empty
// payloads, as History's do.
func (w *Queue) Finished(ctx context.Context, q contract.FinishedQuery) (contract.FinishedPage, error) {
	return w.Passthrough.Finished(ctx, q)
}

// Find passes through: the items show their references and empty
// payloads, as History's do.
func (w *Queue) Find(ctx context.Context, queue, id string) ([]contract.Item, error) {
	return w.Passthrough.Find(ctx, queue, id)
}

// Requeue passes through; requeued items keep their references.
func (w *Queue) Requeue(ctx context.Context, f contract.DeadLetterFilter) (int, error) {
	return w.inner.Requeue(ctx, f)
}

// Purge deletes the matching dead letters and their blobs. It first pages
// through the matching dead letters to learn their references, purges, and
// then deletes each blob whose item is gone. When the queue is an
// Inspector, a blob is kept if its item is still there with the same
// reference (requeued by someone else between the listing and the purge);
// without one that race can delete the blob of a requeued item. A dead
// letter that starts matching between the listing and the purge loses its
// item but orphans its blob. Blobs that could not be deleted are reported
// as [*BlobCleanupError]s joined to the result.
func (w *Queue) Purge(ctx context.Context, f contract.DeadLetterFilter) (int, error) {
	if err := contract.ValidateFilter(f); err != nil {
		return 0, err
	}
	var found []offloaded
	q := contract.DeadLetterQuery{DeadLetterFilter: f, Page: contract.PageRequest{Limit: contract.MaxPageSize}}
	for {
		page, err := w.inner.DeadLetters(ctx, q)
		if err != nil {
			return 0, fmt.Errorf("claimcheck: list dead letters before purging: %w", err)
		}
		for _, it := range page.Items {
			if ref, ok := refOf(it); ok {
				found = append(found, offloaded{key: it.Key(), ref: ref})
			}
		}
		if page.Next == "" {
			break
		}
		q.Page.Cursor = page.Next
	}
	n, err := w.inner.Purge(ctx, f)
	if err != nil || len(found) == 0 {
		return n, err
	}
	var errs []error
	for _, p := range found {
		if w.Inspector() != nil {
			if cerr := w.dropIfUnreferenced(ctx, p); cerr != nil {
				errs = append(errs, cerr)
			}
			continue
		}
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		if derr := w.cc.Delete(dctx, p.key.Tenant, p.ref); derr != nil {
			errs = append(errs, &BlobCleanupError{Tenant: p.key.Tenant, Ref: p.ref, Err: derr})
		}
		cancel()
	}
	return n, errors.Join(errs...)
}
