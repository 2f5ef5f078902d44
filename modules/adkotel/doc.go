// Package adkotel traces and measures any adk StateStore and WorkQueue with
// OpenTelemetry, without the contract or the backings depending on it.
//
// # Tracing a claim from enqueue to process
//
// [WrapQueue] decorates a [contract.WorkQueue] (memstore, redisstore,
// pgstore, or a claim-check wrapper around one) and [WrapState] a
// [contract.StateStore]. Spans follow the OpenTelemetry messaging semantic
// conventions, with the attribute names of package
// go.opentelemetry.io/otel/semconv/v1.43.0:
//
//	span                kind      when
//	send <queue>        PRODUCER  Enqueue; writes traceparent/tracestate into each item's Metadata
//	receive <queue>     CLIENT    Claim; one link per claimed item
//	process <queue>     CONSUMER  around the handler, from ProcessMiddleware; linked to send
//	complete <queue>    CLIENT    Complete; linked to send
//	fail <queue>        CLIENT    Fail that the policy retries; linked to send
//	dead <queue>        CLIENT    Fail that the policy dead-letters; linked to send
//	heartbeat, reap, prune, dead_letters, requeue, purge <queue>   CLIENT
//
// EnqueueReport (over a queue that keeps history) is a send span like
// Enqueue's. Heartbeat, Reap and Prune are background upkeep: on a
// context without a span (the runner's) they are traced only when they
// fail or reap or prune something, so a long lease does not leave a root
// trace per heartbeat. The HistoryKeeper's reads (History, Finished,
// Find, QueueEvents) and Retention settings are forwarded untraced, as
// the Inspector is.
//
// Every queue span carries messaging.system ("memory", "redis",
// "postgresql"), messaging.operation.name and messaging.destination.name;
// spans about one item add messaging.message.id, [TenantKey] (adk.tenant)
// and [AttemptKey] (adk.attempt, counted from 1); batches add
// messaging.batch.message_count. A failed call records the error, an
// error status and error.type. Claim's [contract.ErrEmpty] and GetRun's
// [contract.ErrNotFound] are answers, not errors.
//
// The process span is linked, not parented, to the producer by default,
// as the messaging conventions suggest: one enqueue may be processed many
// times, late and by another service, and each run is a trace of its own. Use
// [WithParentFromMessage] to make the first attempt a child of the
// producer instead. The context rides in the item's Metadata, which every
// backing keeps through claims, retries, the dead letter and requeues, so a
// requeued item processed next week still links to the request that
// enqueued it.
//
// Database spans come from the client's own instrumentation (go-redis
// redisotel, otelpgx): the backings pass the call's context down, so those
// spans are children of ours.
//
// # Metrics
//
// Counters and histograms, each with messaging.system and
// messaging.destination.name:
//   - messaging.client.sent.messages: items enqueued (semantic conventions)
//   - messaging.client.consumed.messages: items claimed (semantic conventions)
//   - messaging.client.operation.duration (s): send, receive and the
//     settles (complete, fail, dead), by messaging.operation.name and .type
//   - adk.claim.duration (s): every claim, with adk.claim.empty
//   - adk.completed, adk.failed, adk.dead, adk.reaped
//   - adk.enqueue.duplicates: items an EnqueueReport found there already
//     (a live ID, or one within its uniqueness window); adk.pruned:
//     finished items Prune removed
//   - messaging.process.duration (s): handler time, from ProcessMiddleware
//   - adk.state.duration (s): state store calls, by db.operation.name
//   - adk.run.fenced_out: run writes a newer execution's fence refused
//     (see [WrapState]), by db.operation.name
//
// Observable instruments, read at collection time:
//   - adk.queue.ready, adk.queue.later, adk.queue.leased, adk.queue.dead:
//     gauges per queue and tenant, from the queue's [contract.Inspector]
//     (at most [WithTenantLimit] tenants by name, the rest summed under
//     [OtherTenant]; at most 100 queues; two seconds per collection)
//   - adk.pool.acquires, adk.pool.waits, adk.pool.exhausted,
//     adk.listener.reconnects, adk.wakes: counters from the backing's
//     [contract.StatsSource]
//
// # Setting up
//
// This package depends on the OpenTelemetry API only: it links no SDK and
// no exporter. Package [github.com/adkit/adk/modules/adkotel/otelsetup]
// builds SDK providers from the standard OTEL_* environment variables
// and installs them as the globals, which every constructor here uses
// unless given [WithTracerProvider], [WithMeterProvider] or
// [WithPropagators]; any other set-up that installs globals (contrib's
// autoexport, say) does as well.
package adkotel
