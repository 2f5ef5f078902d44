// Package dashboard is the operations web UI for adk queues: an
// http.Handler that shows tenant rotation, leases, dead letters and backing
// health for any backing that implements [contract.WorkQueue] and
// [contract.Inspector] — the in-memory store, Redis or PostgreSQL — and
// lets a token holder requeue or purge dead letters and, on a backing that
// enforces them, set the tenants' flow-control limits.
//
// # Pages
//
// Every page has a JSON twin under /api/ built from the same model, so a
// script sees exactly what a person sees:
//
//   - / and /api/overview: every queue's totals, the health verdict, and
//     SVG charts of claims per second, depth, dead ratio and queue latency,
//     each with a line per busy tenant over the queue's own, a value axis
//     from zero and UTC time labels, over 30 minutes, 6 or 24 hours.
//   - /fairness: the last window of claims replayed as one FIFO queue
//     would have served them, beside how adk served them, with each
//     tenant's turns and wait under both.
//   - /tenants: the rotation order now, the last N turns as a coloured
//     strip and as one lane per tenant (a tenant whose ready work is older
//     than the whole window and got no turn in it is starving, and is
//     highlighted), and per tenant the
//     ready, later, leased, dead and served counts and the queue latency
//     (the age of its oldest ready item); on a backing that enforces
//     limits ([contract.AsFlowController]), each tenant's live leases
//     against its cap, rate tokens, budget used and why a claim passes it
//     over now (cap, rate or budget, with until when known).
//   - /limits: the queue's default limits and every tenant's, with the
//     form that sets the default or one tenant's own; PUT, POST and
//     DELETE /api/limits do the same for scripts. A change needs a
//     read-write token that sees every tenant of the queue, and bad
//     limits are refused with the contract's [contract.ValidationError],
//     changing nothing.
//   - /queue: the queue's lifecycle controls and, when its backing spreads
//     it over more than one shard ([contract.AsShardReporter]), each
//     shard's master, slot, tenants, queued items, live leases and claims
//     per second, with their sums (also /api/shards). A tenant-scoped
//     token is told only how many shards there are: a shard's counts sum
//     every tenant on it.
//   - /leases: live leases soonest expiry first, with time left; leases
//     past expiry that no reaper has returned yet are highlighted.
//   - /dead: dead letters newest first, paged with the backing's cursor
//     (100,000 stay browsable) forward, back, to either end or to any page
//     by number, filtered by tenant, item id and error text (ASCII case
//     ignored, on every backing), with the exact count of the filter
//     above the list; requeue or purge one letter, the ticked rows, or
//     every letter the filter matches. /dead/errors groups the letters by
//     error, largest group first. A bulk action first shows, at
//     /dead/confirm, exactly how many letters it will touch, and then
//     takes the same filter object as the listing (a selection is narrowed
//     by it too), so it never touches a letter the listing would not show.
//   - /item: one item by tenant, queue and id, with its lease and, when a
//     [contract.StateStore] is configured, the run of the same id.
//   - /health: each check of [contract.Inspector.Health] green, amber or
//     red, with the fix for each that is not green.
//   - /audit: the audit trail, newest first, for read-write tokens.
//   - /healthz for probes and /metrics for Prometheus.
//
// Pages are rendered on the server with templ; a small embedded script
// refreshes the live region of a page every few seconds (a noscript meta
// refresh does the same without script). There is no JavaScript build.
//
// # Sampler
//
// A [Server] snapshots the Inspector every [Config.SampleEvery] into a
// fixed-size ring of [Config.SampleKeep] snapshots, and every
// [Config.HistoryEvery] into a second ring of [Config.HistoryKeep] (a day
// at the defaults), which feed the charts and the /metrics gauges; a
// scrape never queries the backing. Memory is bounded whatever the
// backing holds: a snapshot keeps the totals of at most 32 queues and the
// busiest 8 tenants of at most 8 of them, and a chart draws at most 480
// snapshots. [Server.Close] stops the sampler's goroutine.
//
// # Security
//
// Without a read-write token ([Config.Token], or one of [Config.Tokens])
// the dashboard is read-only and every action button is disabled and says
// why. Tokens are named, read-only or read-write (see [Token],
// [ParseTokens] and [TokensFromEnv]); a weak secret refuses [New] with how
// to generate a strong one ([CheckSecret]). Every authentication, by form
// or header, is throttled per client address and per token name (429 with
// Retry-After). A token may see only some tenants and queues: it then
// sees only theirs on every page, /api/ twin, chart and total, is refused
// (403, changing nothing) any request naming another tenant or queue,
// bulk actions included, and a visitor without a token sees nothing
// ([Config.RequireSignIn]). Every action, done or refused, and every
// sign-in is audited: a log line, a span event and a bounded list at
// /audit ([Config.AuditKeep]). With a token, a person signs in at
// /login (the session cookie is HttpOnly, SameSite=Strict and
// HMAC-signed with a key drawn at every start, so a restart rotates it and
// signs everyone out; the session is held by the process too, so signing
// out ends it for good and [Config.SessionIdle] without a request ends it) and every POST must carry the
// session's CSRF token; a script instead sends "Authorization: Bearer
// <token>" (or Basic with the token's name as the user), which needs no CSRF token because a browser never adds that
// header by itself. Pages are escaped by templ and served under a
// Content-Security-Policy that allows only the dashboard's own script and
// stylesheet. A [Config.DSN] is never rendered, and error text that quotes
// it, or its password, is scrubbed before display. [Config.AllowedHosts]
// refuses foreign Host headers, so a dashboard on 127.0.0.1 cannot be read
// through DNS rebinding; the adk-dashboard command sets it when it listens
// on loopback, which it does by default.
//
// # Observability
//
// Every request is a span (otelecho, with [Config.TracerProvider] or the
// global provider). Metrics come from the dashboard's own OpenTelemetry
// meter provider, exported through a private Prometheus registry at
// /metrics: request durations by route, actions, and the sampled queue
// depths by state.
package dashboard
