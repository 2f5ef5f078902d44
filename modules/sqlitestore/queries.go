package sqlitestore

import (
	"embed"
	"io/fs"
	"strings"
	"sync"
)

// Each statement is embedded into a variable of its own, so a query file
// that is missing or misnamed fails the build instead of a claim.
var (
	//go:embed queries/blob_delete.sql
	blobDeleteSQL string
	//go:embed queries/blob_get.sql
	blobGetSQL string
	//go:embed queries/blob_put.sql
	blobPutSQL string
	//go:embed queries/bury.sql
	burySQL string
	//go:embed queries/cancel.sql
	cancelSQL string
	//go:embed queries/cancel_mark.sql
	cancelMarkSQL string
	//go:embed queries/cancel_matching.sql
	cancelMatchingSQL string
	//go:embed queries/claim_heads.sql
	claimHeadsSQL string
	//go:embed queries/claim_lease.sql
	claimLeaseSQL string
	//go:embed queries/claim_next.sql
	claimNextSQL string
	//go:embed queries/claim_next_ranked.sql
	claimNextRankedSQL string
	//go:embed queries/claim_wake_ranked.sql
	claimWakeRankedSQL string
	//go:embed queries/complete.sql
	completeSQL string
	//go:embed queries/complete_drop.sql
	completeDropSQL string
	//go:embed queries/counter_get.sql
	counterGetSQL string
	//go:embed queries/counter_take.sql
	counterTakeSQL string
	//go:embed queries/counters_set.sql
	countersSetSQL string
	//go:embed queries/dead_count.sql
	deadCountSQL string
	//go:embed queries/dead_newest.sql
	deadNewestSQL string
	//go:embed queries/dead_oldest.sql
	deadOldestSQL string
	//go:embed queries/enqueue.sql
	enqueueSQL string
	//go:embed queries/enqueue_found.sql
	enqueueFoundSQL string
	//go:embed queries/event_last_claim.sql
	eventLastClaimSQL string
	//go:embed queries/event_trim.sql
	eventTrimSQL string
	//go:embed queries/events_delete.sql
	eventsDeleteSQL string
	//go:embed queries/events_item.sql
	eventsItemSQL string
	//go:embed queries/events_purge_cancelled.sql
	eventsPurgeCancelledSQL string
	//go:embed queries/find_id.sql
	findIDSQL string
	//go:embed queries/finished_add.sql
	finishedAddSQL string
	//go:embed queries/finished_newer.sql
	finishedNewerSQL string
	//go:embed queries/finished_older.sql
	finishedOlderSQL string
	//go:embed queries/flow_heads.sql
	flowHeadsSQL string
	//go:embed queries/flow_heads_plain.sql
	flowHeadsPlainSQL string
	//go:embed queries/flow_tenants.sql
	flowTenantsSQL string
	//go:embed queries/health_counts.sql
	healthCountsSQL string
	//go:embed queries/heartbeat.sql
	heartbeatSQL string
	//go:embed queries/history_item.sql
	historyItemSQL string
	//go:embed queries/inspect_item.sql
	inspectItemSQL string
	//go:embed queries/inspect_leases.sql
	inspectLeasesSQL string
	//go:embed queries/inspect_order.sql
	inspectOrderSQL string
	//go:embed queries/inspect_queues.sql
	inspectQueuesSQL string
	//go:embed queries/inspect_recent.sql
	inspectRecentSQL string
	//go:embed queries/inspect_served.sql
	inspectServedSQL string
	//go:embed queries/inspect_tenants.sql
	inspectTenantsSQL string
	//go:embed queries/item_delete.sql
	itemDeleteSQL string
	//go:embed queries/item_state.sql
	itemStateSQL string
	//go:embed queries/lease_attempts.sql
	leaseAttemptsSQL string
	//go:embed queries/lease_cancel.sql
	leaseCancelSQL string
	//go:embed queries/leased_by_tenant.sql
	leasedByTenantSQL string
	//go:embed queries/limits_delete.sql
	limitsDeleteSQL string
	//go:embed queries/limits_get.sql
	limitsGetSQL string
	//go:embed queries/limits_list.sql
	limitsListSQL string
	//go:embed queries/limits_put.sql
	limitsPutSQL string
	//go:embed queries/log_bounds.sql
	logBoundsSQL string
	//go:embed queries/log_read.sql
	logReadSQL string
	//go:embed queries/log_take_many.sql
	logTakeManySQL string
	//go:embed queries/log_trim.sql
	logTrimSQL string
	//go:embed queries/pause_queue.sql
	pauseQueueSQL string
	//go:embed queries/pause_tenant.sql
	pauseTenantSQL string
	//go:embed queries/paused_count.sql
	pausedCountSQL string
	//go:embed queries/paused_get.sql
	pausedGetSQL string
	//go:embed queries/paused_list.sql
	pausedListSQL string
	//go:embed queries/prune_scan.sql
	pruneScanSQL string
	//go:embed queries/prune_unique.sql
	pruneUniqueSQL string
	//go:embed queries/purge.sql
	purgeSQL string
	//go:embed queries/purge_cancelled.sql
	purgeCancelledSQL string
	//go:embed queries/queue_get.sql
	queueGetSQL string
	//go:embed queries/queue_set.sql
	queueSetSQL string
	//go:embed queries/queue_take.sql
	queueTakeSQL string
	//go:embed queries/reap_expired.sql
	reapExpiredSQL string
	//go:embed queries/recent_put.sql
	recentPutSQL string
	//go:embed queries/requeue.sql
	requeueSQL string
	//go:embed queries/resume.sql
	resumeSQL string
	//go:embed queries/resume_tenant.sql
	resumeTenantSQL string
	//go:embed queries/resumed_get.sql
	resumedGetSQL string
	//go:embed queries/retention_events.sql
	retentionEventsSQL string
	//go:embed queries/retention_get.sql
	retentionGetSQL string
	//go:embed queries/retention_put.sql
	retentionPutSQL string
	//go:embed queries/retry.sql
	retrySQL string
	//go:embed queries/run_blob_keep.sql
	runBlobKeepSQL string
	//go:embed queries/run_blob_recycle.sql
	runBlobRecycleSQL string
	//go:embed queries/run_blobs_delete.sql
	runBlobsDeleteSQL string
	//go:embed queries/run_delete.sql
	runDeleteSQL string
	//go:embed queries/run_fork.sql
	runForkSQL string
	//go:embed queries/run_get.sql
	runGetSQL string
	//go:embed queries/run_insert.sql
	runInsertSQL string
	//go:embed queries/run_list.sql
	runListSQL string
	//go:embed queries/run_list_session.sql
	runListSessionSQL string
	//go:embed queries/run_patch.sql
	runPatchSQL string
	//go:embed queries/run_update.sql
	runUpdateSQL string
	//go:embed queries/run_version_get.sql
	runVersionGetSQL string
	//go:embed queries/run_version_keep.sql
	runVersionKeepSQL string
	//go:embed queries/run_version_keep_patch.sql
	runVersionKeepPatchSQL string
	//go:embed queries/run_version_recycle.sql
	runVersionRecycleSQL string
	//go:embed queries/run_versions_delete.sql
	runVersionsDeleteSQL string
	//go:embed queries/run_versions_page.sql
	runVersionsPageSQL string
	//go:embed queries/run_versions_prune.sql
	runVersionsPruneSQL string
	//go:embed queries/snooze.sql
	snoozeSQL string
	//go:embed queries/timeouts_due.sql
	timeoutsDueSQL string
	//go:embed queries/turn_get.sql
	turnGetSQL string
	//go:embed queries/turn_join.sql
	turnJoinSQL string
	//go:embed queries/turn_served.sql
	turnServedSQL string
	//go:embed queries/turn_served_flow.sql
	turnServedFlowSQL string
	//go:embed queries/turn_wake.sql
	turnWakeSQL string
	//go:embed queries/turn_sweep.sql
	turnSweepSQL string
	//go:embed queries/usage_add.sql
	usageAddSQL string
	//go:embed queries/usage_prune.sql
	usagePruneSQL string
	//go:embed queries/usage_reset.sql
	usageResetSQL string
	//go:embed queries/usage_window.sql
	usageWindowSQL string
	//go:embed queries/wait.sql
	waitSQL string
	//go:embed queries/wait_next.sql
	waitNextSQL string
	//go:embed queries/wait_next_reset.sql
	waitNextResetSQL string
	//go:embed queries/waiting_page.sql
	waitingPageSQL string
)

//go:embed queries/*.sql
var queryFiles embed.FS

// queryFile holds the text of every statement of queries/: a write
// transaction takes these from the statements prepared on the pool.
var queryFile = func() map[string]bool {
	out := map[string]bool{}
	names, err := fs.Glob(queryFiles, "queries/*.sql")
	if err != nil {
		panic("sqlitestore: " + err.Error())
	}
	for _, n := range names {
		b, err := queryFiles.ReadFile(n)
		if err != nil {
			panic("sqlitestore: " + err.Error())
		}
		out[string(b)] = true
	}
	return out
}()

// rowsSQL is a multi-row statement built in code, one text per row count
// (1 to eventChunk), each built on first use. Like the statements of
// queries/, a write transaction takes these from the statements prepared
// on the pool (pooled), so that a connection compiles each count once in
// its life rather than once per transaction.
type rowsSQL struct {
	once  [eventChunk + 1]sync.Once
	text  [eventChunk + 1]string
	build func(n int) string
}

// pooledRows holds the text of every rowsSQL statement built so far.
var pooledRows sync.Map

// get is the statement for n rows (1 ≤ n ≤ eventChunk).
func (r *rowsSQL) get(n int) string {
	r.once[n].Do(func() {
		r.text[n] = r.build(n)
		pooledRows.Store(r.text[n], true)
	})
	return r.text[n]
}

// valuesText is head, then row(r) for each of n rows joined by commas,
// then tail: the text of a multi-row statement.
func valuesText(head string, n int, row func(r int) string, tail string) string {
	var sb strings.Builder
	sb.WriteString(head)
	for r := range n {
		if r > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(row(r))
	}
	sb.WriteString(tail)
	return sb.String()
}

// pooled says whether a write transaction takes query's statement from
// the pool: a statement of queries/ or a rowsSQL one.
func pooled(query string) bool {
	if queryFile[query] {
		return true
	}
	_, ok := pooledRows.Load(query)
	return ok
}
