package adkotel

import (
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/semconv/v1.43.0/messagingconv"
)

// Attribute keys of our own, for what the semantic conventions have no
// name for. Everything else uses the semconv constants.
const (
	// TenantKey is the tenant of an item or run.
	TenantKey = attribute.Key("adk.tenant")
	// AttemptKey is the attempt an item is on, counted from 1: the claims
	// that ended in a failure or an expired lease, plus one.
	AttemptKey = attribute.Key("adk.attempt")
	// DecisionKey is the policy's reason after a failed attempt: "retry",
	// "max_attempts" or "permanent" (policy.Reason*).
	DecisionKey = attribute.Key("adk.decision")
	// LostKey counts the leases of a settle that were lost (their token no
	// longer matched).
	LostKey = attribute.Key("adk.lost")
	// ClaimEmptyKey is true on claim latency measurements of claims that
	// found nothing, so they can be told from those that did.
	ClaimEmptyKey = attribute.Key("adk.claim.empty")
	// ClaimedKey counts the leases a CompleteAndClaim claimed beside its
	// completes.
	ClaimedKey = attribute.Key("adk.claimed")
	// PassedOverKey counts the tenants with due work a claim passed over
	// because a limit held them back (contract.ClaimReport).
	PassedOverKey = attribute.Key("adk.claim.passed_over")
	// HeldReasonKey is why a tenant was held back: "cap", "rate" or
	// "budget" (contract.HeldReason), on the held-back counter.
	HeldReasonKey = attribute.Key("adk.held.reason")
	// DuplicatesKey counts the items of an EnqueueReport that the queue
	// reported as duplicates (contract.EnqueueResult).
	DuplicatesKey = attribute.Key("adk.duplicates")
	// RunIDKey is the id of a run in state store spans.
	RunIDKey = attribute.Key("adk.run.id")
	// RunVersionKey is the version of a run as stored after a write; on
	// get_run_version the version asked for, on fork_run the version
	// forked.
	RunVersionKey = attribute.Key("adk.run.version")
	// FenceKey is the fence a run write carries (Run.Fence, Patch.Fence,
	// the fence of DeleteRunFenced), on the spans of fenced writes only.
	FenceKey = attribute.Key("adk.run.fence")
	// StoredFenceKey is the run's fence when a write was fenced out: the
	// fence of the newer execution that wrote it.
	StoredFenceKey = attribute.Key("adk.run.fence.stored")
	// RunNewIDKey is the id of the run ForkRun creates.
	RunNewIDKey = attribute.Key("adk.run.new_id")
	// SignalKey is the signal name of a wait or a Signal.
	SignalKey = attribute.Key("adk.signal")
	// StateFoundKey is the state Cancel found the item in.
	StateFoundKey = attribute.Key("adk.state.found")
	// DelayKey is a snooze's or a wait's delay, in seconds.
	DelayKey = attribute.Key("adk.delay_s")
)

// Operation names: messaging.operation.name values and the first word of
// span names.
const (
	opSend        = "send"
	opReceive     = "receive"
	opProcess     = "process"
	opComplete    = "complete"
	opFail        = "fail"
	opDead        = "dead"
	opHeartbeat   = "heartbeat"
	opReap        = "reap"
	opDeadLetters = "dead_letters"
	opRequeue     = "requeue"
	opPurge       = "purge"
	opPrune       = "prune"

	// The lifecycle controls (lifecycle.go).
	opPause          = "pause"
	opResume         = "resume"
	opCancel         = "cancel"
	opCancelMatching = "cancel_matching"
	opPurgeCancelled = "purge_cancelled"
	opSnooze         = "snooze"
	opWait           = "wait"
	opSignal         = "signal"
)

func systemAttr(system string) attribute.KeyValue {
	return semconv.MessagingSystemKey.String(system)
}

// spanName follows the messaging conventions: "{operation} {destination}",
// or the operation alone when the call spans several destinations.
func spanName(op, queue string) string {
	if queue == "" {
		return op
	}
	return op + " " + queue
}

func messagingSystem(system string) messagingconv.SystemAttr {
	return messagingconv.SystemAttr(system)
}
