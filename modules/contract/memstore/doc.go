// Package memstore is the in-process backing of the contract: one [Store]
// is a [contract.StateStore], a [contract.WorkQueue], a
// [contract.Inspector], a [contract.Waker] and a [contract.StatsSource].
//
// It is the reference semantics the durable backings are measured against,
// and the default of tests, development and the demo. It is not durable:
// everything it holds lives in the process and is gone when the process
// exits. Use modules redisstore or pgstore where runs must outlive a pod.
//
// # Use
//
//	store := memstore.New(nil, memstore.Settings{}) // the wall clock, policy.Default(), 256 KiB values
//	run, err := store.PutRun(ctx, contract.Run{Tenant: "acme", ID: "run-1"})
//	err = store.Enqueue(ctx, contract.Item{Tenant: "acme", ID: "run-1"})
//	leases, err := store.Claim(ctx, contract.ClaimRequest{Worker: "w1", LeaseFor: 30 * time.Second, Max: 10})
//
// Tests pass a contracttest.FakeClock to move time by hand; the fields of
// [Settings] (policy, value cap, recent turns) change the defaults.
//
// # Semantics
//
// A run gets its Seq from a store-wide counter when it is created, and
// listings page by it, so a run that changes while a listing is read is
// neither skipped nor repeated. Every value crossing the API is copied:
// a caller never shares a byte slice or a map with the store.
//
// Each queue keeps, per tenant, its queued items ordered by due time and
// then enqueue order, and a rotation of the tenants that have queued work.
// A claim serves the tenant at the head of the rotation one item and sends
// it to the back, round after round until the batch is full or no tenant
// has a due item. A tenant whose items are all delayed keeps its place; a
// tenant that newly gets work joins at the back. Leases carry fencing
// tokens from a store-wide counter, so no token is ever issued twice; a
// heartbeat issues a new one. A lease is live until its ExpiresAt: from
// that instant a heartbeat is refused and [Store.Reap] hands the lease to
// the policy like a failure with contract.ErrLeaseExpired, so a heartbeat
// and a reap at the same instant never both win. Until the reap, Complete
// and Fail with the lease's token still succeed: nobody else holds it.
//
// One mutex guards the store. Every operation is O(log n) in the items,
// runs and tenants involved, apart from
// Tenants' search for each tenant's oldest due item and the tenant and
// error filters of the dead-letter calls, which scan what they report on,
// and a queue's first Find, which indexes its items by ID (kept up from
// then on, so later Finds are O(1) in the items). Each tenant indexes
// its own items, so a settle updates a map the size of its tenant.
// Balanced trees index the leases by expiry and the dead letters. The
// ready items of each priority, the rotation and the finished items kept
// sit in sorted rings instead, as they mostly arrive at one end and leave
// from the other: a
// claim then takes neighbouring slots in O(1) rather than descending a
// tree, and only what arrives between the ends (a retried item due
// before newer ones, a tenant back with the place it kept) goes to a
// tree beside the ring. A small record of every queue and tenant seen is
// kept for the life of the store, so that Served counts survive a tenant
// running dry.
//
// The package holds no test faults: the mutation table that proves the
// suites catch a broken store lives in mutation_test.go as edits to these
// files, built with go test -overlay.
package memstore
