package pgstore

import (
	"embed"
	"slices"
	"strings"
)

// Each statement is embedded into a variable of its own, so a query file
// that is missing or misnamed fails the build instead of a claim.
var (
	//go:embed queries/retention_set.sql
	retentionSetSQL string
	//go:embed queries/retention_get.sql
	retentionGetSQL string
	//go:embed queries/history_item.sql
	historyItemSQL string
	//go:embed queries/history_events.sql
	historyEventsSQL string
	//go:embed queries/finished_older.sql
	finishedOlderSQL string
	//go:embed queries/finished_newer.sql
	finishedNewerSQL string
	//go:embed queries/find.sql
	findSQL string
	//go:embed queries/queue_events.sql
	queueEventsSQL string
	//go:embed queries/prune.sql
	pruneSQL string
	//go:embed queries/blob_delete.sql
	blobDeleteSQL string
	//go:embed queries/blob_get.sql
	blobGetSQL string
	//go:embed queries/blob_put.sql
	blobPutSQL string
	//go:embed queries/claim.sql
	claimSQL string
	//go:embed queries/claim_settings.sql
	claimSettingsSQL string
	//go:embed queries/claim_flow.sql
	claimFlowSQL string
	//go:embed queries/claim_flow_settings.sql
	claimFlowSettingsSQL string
	//go:embed queries/charge.sql
	chargeSQL string
	//go:embed queries/flow_status.sql
	flowStatusSQL string
	//go:embed queries/limits_get.sql
	limitsGetSQL string
	//go:embed queries/limits_set.sql
	limitsSetSQL string
	//go:embed queries/complete.sql
	completeSQL string
	//go:embed queries/complete_flow.sql
	completeFlowSQL string
	//go:embed queries/complete_settings.sql
	completeSettingsSQL string
	//go:embed queries/complete_lean_settings.sql
	completeLeanSettingsSQL string
	//go:embed queries/dead_count.sql
	deadCountSQL string
	//go:embed queries/dead_list.sql
	deadListSQL string
	//go:embed queries/dead_list_newest.sql
	deadListNewestSQL string
	//go:embed queries/dead_summary.sql
	deadSummarySQL string
	//go:embed queries/enqueue.sql
	enqueueSQL string
	//go:embed queries/health_indexes.sql
	healthIndexesSQL string
	//go:embed queries/health_work.sql
	healthWorkSQL string
	//go:embed queries/heartbeat.sql
	heartbeatSQL string
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
	//go:embed queries/inspect_tenants.sql
	inspectTenantsSQL string
	//go:embed queries/lease_lock.sql
	leaseLockSQL string
	//go:embed queries/park.sql
	parkSQL string
	//go:embed queries/park_candidates.sql
	parkCandidatesSQL string
	//go:embed queries/prune_candidates.sql
	pruneCandidatesSQL string
	//go:embed queries/prune_delete.sql
	pruneDeleteSQL string
	//go:embed queries/purge.sql
	purgeSQL string
	//go:embed queries/reap_lock.sql
	reapLockSQL string
	//go:embed queries/requeue.sql
	requeueSQL string
	//go:embed queries/requeue_lock.sql
	requeueLockSQL string
	//go:embed queries/run_delete.sql
	runDeleteSQL string
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
	//go:embed queries/run_update_keep.sql
	runUpdateKeepSQL string
	//go:embed queries/run_update_keep_prune.sql
	runUpdateKeepPruneSQL string
	//go:embed queries/run_versions_prune.sql
	runVersionsPruneSQL string
	//go:embed queries/run_prune_async.sql
	runPruneAsyncSQL string
	//go:embed queries/run_patch_keep.sql
	runPatchKeepSQL string
	//go:embed queries/run_patch_first.sql
	runPatchFirstSQL string
	//go:embed queries/run_patch_first_prune.sql
	runPatchFirstPruneSQL string
	//go:embed queries/run_patch_prune.sql
	runPatchPruneSQL string
	//go:embed queries/run_version_get.sql
	runVersionGetSQL string
	//go:embed queries/run_versions_list.sql
	runVersionsListSQL string
	//go:embed queries/run_fork.sql
	runForkSQL string
	//go:embed queries/settle_failed.sql
	settleFailedSQL string
	//go:embed queries/turns_lock.sql
	turnsLockSQL string
	//go:embed queries/turns_share.sql
	turnsShareSQL string

	// Lifecycle controls (lifecycle.go).
	//go:embed queries/cancel.sql
	cancelSQL string
	//go:embed queries/cancel_lock.sql
	cancelLockSQL string
	//go:embed queries/cancel_matching.sql
	cancelMatchingSQL string
	//go:embed queries/cancel_settle.sql
	cancelSettleSQL string
	//go:embed queries/count_matching.sql
	countMatchingSQL string
	//go:embed queries/pause.sql
	pauseSQL string
	//go:embed queries/paused.sql
	pausedSQL string
	//go:embed queries/purge_cancelled.sql
	purgeCancelledSQL string
	//go:embed queries/resume.sql
	resumeSQL string
	//go:embed queries/signal.sql
	signalSQL string
	//go:embed queries/snooze.sql
	snoozeSQL string
	//go:embed queries/wait.sql
	waitSQL string
	//go:embed queries/wait_timeouts.sql
	waitTimeoutsSQL string
	//go:embed queries/wait_timeouts_lock.sql
	waitTimeoutsLockSQL string
	//go:embed queries/waiting_list.sql
	waitingListSQL string
)

//go:embed queries/fragments/*.sql
var fragmentFS embed.FS

// queries holds one store's SQL, rendered once with its table names and
// the shared fragments: one field a statement, named after its file in
// queries/.
type queries struct {
	blobDelete           string
	blobGet              string
	blobPut              string
	claim                string
	claimLean            string
	claimEvents          string
	claimPrio            string
	claimSettings        string
	claimFlow            string
	claimFlowLean        string
	claimFlowSettings    string
	charge               string
	flowStatus           string
	limitsGet            string
	limitsSet            string
	complete             string
	completeLean         string
	completeFlow         string
	completeFlowLean     string
	completeSettings     string
	completeLeanSettings string
	deadCount            string
	deadList             string
	deadListNewest       string
	deadSummary          string
	enqueue              string
	healthIndexes        string
	healthWork           string
	heartbeat            string
	inspectItem          string
	inspectLeases        string
	inspectOrder         string
	inspectQueues        string
	inspectRecent        string
	inspectTenants       string
	leaseLock            string
	park                 string
	parkCandidates       string
	pruneCandidates      string
	pruneDelete          string
	purge                string
	reapLock             string
	requeue              string
	requeueLock          string
	runDelete            string
	runGet               string
	runInsert            string
	runList              string
	runListSession       string
	runPatch             string
	runUpdate            string
	runUpdateKeep        string
	runUpdateKeepPrune   string
	runVersionsPrune     string
	runPruneAsync        string
	runPatchKeep         string
	runPatchFirst        string
	runPatchFirstPrune   string
	runPatchPrune        string
	runVersionGet        string
	runVersionsList      string
	runFork              string
	settleFailed         string
	turnsLock            string
	turnsShare           string

	cancel           string
	cancelLock       string
	cancelMatching   string
	cancelSettle     string
	countMatching    string
	pause            string
	paused           string
	purgeCancelled   string
	resume           string
	signal           string
	snooze           string
	wait             string
	waitTimeouts     string
	waitTimeoutsLock string
	waitingList      string

	retentionSet  string
	retentionGet  string
	historyItem   string
	historyEvents string
	finishedOlder string
	finishedNewer string
	find          string
	queueEvents   string
	prune         string
}

func loadQueries(t StateTables) queries {
	r := renderer(t)
	return queries{
		retentionSet:         r(retentionSetSQL),
		retentionGet:         r(retentionGetSQL),
		historyItem:          r(historyItemSQL),
		historyEvents:        r(historyEventsSQL),
		finishedOlder:        r(finishedOlderSQL),
		finishedNewer:        r(finishedNewerSQL),
		find:                 r(findSQL),
		queueEvents:          r(queueEventsSQL),
		prune:                r(pruneSQL),
		blobDelete:           r(blobDeleteSQL),
		blobGet:              r(blobGetSQL),
		blobPut:              r(blobPutSQL),
		claim:                r(claimFull.Replace(claimSQL)),
		claimLean:            r(claimLean.Replace(claimSQL)),
		claimEvents:          r(claimEvents.Replace(claimSQL)),
		claimPrio:            r(claimPrio.Replace(claimSQL)),
		claimSettings:        r(claimSettingsSQL),
		claimFlow:            r(claimFull.Replace(claimFlowSQL)),
		claimFlowLean:        r(claimFlowLean.Replace(claimFlowSQL)),
		claimFlowSettings:    r(claimFlowSettingsSQL),
		charge:               r(chargeSQL),
		flowStatus:           r(flowStatusSQL),
		limitsGet:            r(limitsGetSQL),
		limitsSet:            r(limitsSetSQL),
		complete:             r(completeFull.Replace(completeSQL)),
		completeLean:         r(completeLean.Replace(completeSQL)),
		completeFlow:         r(completeFull.Replace(completeFlowSQL)),
		completeFlowLean:     r(completeFlowLean.Replace(completeFlowSQL)),
		completeSettings:     r(completeSettingsSQL),
		completeLeanSettings: r(completeLeanSettingsSQL),
		deadCount:            r(deadCountSQL),
		deadList:             r(deadListSQL),
		deadListNewest:       r(deadListNewestSQL),
		deadSummary:          r(deadSummarySQL),
		enqueue:              r(enqueueSQL),
		healthIndexes:        r(healthIndexesSQL),
		healthWork:           r(healthWorkSQL),
		heartbeat:            r(heartbeatSQL),
		inspectItem:          r(inspectItemSQL),
		inspectLeases:        r(inspectLeasesSQL),
		inspectOrder:         r(inspectOrderSQL),
		inspectQueues:        r(inspectQueuesSQL),
		inspectRecent:        r(inspectRecentSQL),
		inspectTenants:       r(inspectTenantsSQL),
		leaseLock:            r(leaseLockSQL),
		park:                 r(parkSQL),
		parkCandidates:       r(parkCandidatesSQL),
		pruneCandidates:      r(pruneCandidatesSQL),
		pruneDelete:          r(pruneDeleteSQL),
		purge:                r(purgeSQL),
		reapLock:             r(reapLockSQL),
		requeue:              r(requeueSQL),
		requeueLock:          r(requeueLockSQL),
		runDelete:            r(runDeleteSQL),
		runGet:               r(runGetSQL),
		runInsert:            r(runInsertSQL),
		runList:              r(runListSQL),
		runListSession:       r(runListSessionSQL),
		runPatch:             r(runPatchSQL),
		runUpdate:            r(runUpdateSQL),
		runUpdateKeep:        r(runUpdateKeepSQL),
		runUpdateKeepPrune:   r(runUpdateKeepPruneSQL),
		runVersionsPrune:     r(runVersionsPruneSQL),
		runPruneAsync:        r(runPruneAsyncSQL),
		runPatchKeep:         r(runPatchKeepSQL),
		runPatchFirst:        r(runPatchFirstSQL),
		runPatchFirstPrune:   r(runPatchFirstPruneSQL),
		runPatchPrune:        r(runPatchPruneSQL),
		runVersionGet:        r(runVersionGetSQL),
		runVersionsList:      r(runVersionsListSQL),
		runFork:              r(runForkSQL),
		settleFailed:         r(settleFailedSQL),
		turnsLock:            r(turnsLockSQL),
		turnsShare:           r(turnsShareSQL),

		cancel:           r(cancelSQL),
		cancelLock:       r(cancelLockSQL),
		cancelMatching:   r(cancelMatchingSQL),
		cancelSettle:     r(cancelSettleSQL),
		countMatching:    r(countMatchingSQL),
		pause:            r(pauseSQL),
		paused:           r(pausedSQL),
		purgeCancelled:   r(purgeCancelledSQL),
		resume:           r(resumeSQL),
		signal:           r(signalSQL),
		snooze:           r(snoozeSQL),
		wait:             r(waitSQL),
		waitTimeouts:     r(waitTimeoutsSQL),
		waitTimeoutsLock: r(waitTimeoutsLockSQL),
		waitingList:      r(waitingListSQL),
	}
}

// claim.sql is rendered four times, and claim_flow.sql twice. The full
// claim serves every queue; the lean claim only a queue that records no
// events and holds no queued item with a priority, and its plan leaves
// out the events' CTEs and the priority ranges of each tenant's pick; the
// events claim (claim.sql only) a queue that holds no queued item with a
// priority, and leaves out the priority ranges; the priorities claim
// (claim.sql only) a queue that records no events, and leaves out the
// events' CTEs. PostgreSQL initializes every node of a plan on every
// execution, used or not, and for a claim of one item that initialization
// was half of the server's work. Measured in server instructions: a claim
// of one, 2.33 million with the full claim.sql and 1.93 million with the
// lean one; of ten with events recorded, 4.59 million with the full claim
// and 4.29 million with the events claim; of ten items with priorities,
// 3.91 million with the full claim and 3.78 million with the priorities
// claim. Each rendering but the full one checks what it cannot serve
// before its rotation ({lean_claim_needs}, {queued_priority}, ret), and
// then claims nothing and says what the queue needs in its marker row:
// claim.sql in the row that says so of limits ('prio', 'events' or 'full'
// for both: {lean_claim_row}), claim_flow.sql in a row of its own
// ({lean_flow_row}).
var (
	claimFull = strings.NewReplacer("{lean_guard}", "", "{claim_pick}", "{pick_items}", "{events}", "{claim_events}",
		"{marker_kind}", "'limited'", "{marker_more}", "", "{lean_row}", "")
	claimLean     = strings.NewReplacer(leanClaim...)
	claimFlowLean = strings.NewReplacer(slices.Concat(leanClaim, []string{"{lean_row}", "{lean_flow_row}"})...)
	claimEvents   = claimWithout("{queued_priority}", "prio", "{pick_plain}", "{claim_events}")
	claimPrio     = claimWithout("EXISTS (SELECT 1 FROM ret)", "events", "{pick_items}", "")
)

// claimWithout renders claim.sql for a queue that does not need what the
// boolean expression needs tests (and kind names, in the marker row, when
// it does), with pick as each tenant's pick and events as the claimed
// events' CTEs.
func claimWithout(needs, kind, pick, events string) *strings.Replacer {
	return strings.NewReplacer("{lean_guard}", "AND NOT "+needs, "{claim_pick}", pick, "{events}", events,
		"{marker_kind}", "CASE WHEN "+needs+" THEN '"+kind+"' ELSE 'limited' END", "{marker_more}", " OR "+needs, "{lean_row}", "")
}

// leanClaim are the placeholders of the lean claims and what they become.
var leanClaim = []string{"{lean_guard}", "AND NOT {lean_claim_needs}", "{claim_pick}", "{pick_plain}", "{events}", "",
	"{marker_kind}", "{lean_claim_row}", "{marker_more}", " OR {lean_claim_needs}"}

// complete.sql is rendered twice as well, and so is complete_flow.sql
// (the Complete of a queue with limits): the full Complete, and a lean
// one for a batch whose queues have no retention row and whose items
// asked for no uniqueness window, which keeps nothing and records no
// event, so its plan is one DELETE (fragments/complete_done_lean.sql;
// with complete_flow.sql's wake check after it):
// 576,000 instructions a Complete of one item with the full statement,
// fewer than half that with the lean one.
var (
	completeFull     = strings.NewReplacer("{done}", "{complete_done}", "{done_more}", "")
	completeLean     = strings.NewReplacer("{done}", "{complete_done_lean}", "{done_more}", "UNION ALL SELECT '', '', '', 0 FROM ret")
	completeFlowLean = strings.NewReplacer("{done}", "{complete_done_lean}", "{done_more}", "UNION ALL SELECT '', '', '', 0, 0 FROM ret")
)

// renderer returns the func that puts the shared fragments
// (queries/fragments) and then the table names in place of their braces.
func renderer(t StateTables) func(string) string {
	frags, err := fragmentFS.ReadDir("queries/fragments")
	if err != nil {
		panic("pgstore: no embedded query fragments")
	}
	var pairs []string
	for _, e := range frags {
		name := strings.TrimSuffix(e.Name(), ".sql")
		pairs = append(pairs, "{"+name+"}", fragment(readSQL(fragmentFS, "queries/fragments/"+e.Name())))
	}
	withFragments := strings.NewReplacer(pairs...)
	// Until nothing changes: a fragment may hold another (complete_done
	// holds record_events, lean_flow_row lean_claim_needs, which holds
	// queued_priority).
	return func(sql string) string {
		for range 8 {
			next := withFragments.Replace(sql)
			if next == sql {
				break
			}
			sql = next
		}
		return render(t, sql)
	}
}

// fragment is a shared piece of SQL (queries/fragments) without its
// comment lines, ready to put in place of its {name} in a query.
func fragment(sql string) string {
	var lines []string
	for line := range strings.Lines(sql) {
		if !strings.HasPrefix(line, "--") {
			lines = append(lines, line)
		}
	}
	return strings.TrimSpace(strings.Join(lines, ""))
}
