package dashboard

import (
	"errors"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/adkit/adk/modules/contract"
)

// Defaults for the zero fields of a Config.
const (
	DefaultSampleEvery  = 5 * time.Second
	DefaultSampleKeep   = 360 // 30 minutes at the default interval
	DefaultHistoryEvery = time.Minute
	DefaultHistoryKeep  = 1440 // 24 hours at the default interval
	DefaultRefresh      = 3 * time.Second
	DefaultSessionTTL   = 12 * time.Hour
	DefaultSessionIdle  = 30 * time.Minute
)

// Config is what a Server shows and how it guards its actions. Queue and
// Inspector are required; every other field has a working zero value.
type Config struct {
	// Queue is acted on by requeue and purge.
	Queue contract.WorkQueue
	// Inspector supplies every read-only view.
	Inspector contract.Inspector
	// State, when set, lets the item page show the run of the same tenant
	// and id (agent loops usually name the work item after its run).
	State contract.StateStore

	// Backing is the name shown in the footer ("memory", "redis",
	// "postgresql"); when empty the Inspector's Health names it.
	Backing string
	// DSN is never shown. It is given only so that an error message that
	// happens to quote it (or its password) is scrubbed before display.
	DSN contract.Secret
	// Token is one read-write token over every tenant, named "admin"
	// (ADK_DASHBOARD_TOKEN): a person signs in with it, or a script sends
	// it as "Authorization: Bearer <token>".
	Token contract.Secret
	// Tokens are further named tokens, each read-only or read-write, over
	// every tenant or a set of tenants and queues (see TokensFromEnv and
	// ParseTokens). Without Token and Tokens the dashboard is read-only.
	// A weak secret refuses New (see CheckSecret).
	Tokens []Token
	// RequireSignIn refuses every page, /api/ twin and /metrics to a
	// visitor holding no token (pages send them to /login; /api/ and
	// /metrics answer 401). It is on by itself when any token sees only
	// some tenants or queues: scopes would mean nothing if a visitor saw
	// everything. /healthz always answers.
	RequireSignIn bool
	// TrustedProxies are the addresses or CIDR ranges of reverse proxies
	// in front of the dashboard: a request from one is taken to come from
	// the address its X-Forwarded-For names, for the sign-in throttle and
	// the audit trail. Without it the connection's address is used.
	TrustedProxies []string

	// DefaultQueue is shown when a request names none; when empty, the
	// first queue the Inspector lists, else contract.DefaultQueue.
	DefaultQueue string
	// Clock tells the time for lease arithmetic and sessions; nil means
	// the wall clock.
	Clock contract.Clock
	// SampleEvery is how often the sampler snapshots the Inspector for the
	// charts and the metrics; SampleKeep how many snapshots it keeps.
	SampleEvery time.Duration
	SampleKeep  int
	// HistoryEvery is how often a snapshot also goes into the long
	// history the 6- and 24-hour charts draw from; HistoryKeep how many
	// of those it keeps. Memory stays bounded whatever the backing holds
	// (see the Sampler section of the package doc).
	HistoryEvery time.Duration
	HistoryKeep  int
	// Refresh is the live-refresh period of the pages; negative disables it.
	Refresh time.Duration
	// SessionTTL bounds a sign-in however busy; SessionIdle ends one
	// after that long without a request from it (a page's own live
	// refresh does not count). Sessions live in the process: signing out
	// ends one at once, and a restart ends them all, as the key that
	// signs the cookies is drawn anew at every start.
	SessionTTL  time.Duration
	SessionIdle time.Duration
	// AllowedHosts, when set, refuses requests whose Host header names any
	// other host (ports ignored): a dashboard on 127.0.0.1 then cannot be
	// read by a web page through DNS rebinding.
	AllowedHosts []string
	// AuditKeep is how many audit entries the /audit page keeps (the
	// newest); every entry is also a log line and a span event.
	AuditKeep int
	// TracerProvider traces every request; nil means the global provider.
	TracerProvider trace.TracerProvider
	// Logger receives sampler and action logs; nil discards them.
	Logger *slog.Logger
}

func (c Config) withDefaults() (Config, error) {
	if c.Queue == nil {
		return c, errors.New("dashboard: Config.Queue is required")
	}
	if c.Inspector == nil {
		return c, errors.New("dashboard: Config.Inspector is required")
	}
	if c.Clock == nil {
		c.Clock = contract.SystemClock{}
	}
	if c.SampleEvery <= 0 {
		c.SampleEvery = DefaultSampleEvery
	}
	if c.SampleKeep <= 1 {
		c.SampleKeep = DefaultSampleKeep
	}
	if c.HistoryEvery <= 0 {
		c.HistoryEvery = DefaultHistoryEvery
	}
	if c.HistoryKeep <= 1 {
		c.HistoryKeep = DefaultHistoryKeep
	}
	if c.Refresh == 0 {
		c.Refresh = DefaultRefresh
	}
	if c.SessionTTL <= 0 {
		c.SessionTTL = DefaultSessionTTL
	}
	if c.SessionIdle <= 0 {
		c.SessionIdle = DefaultSessionIdle
	}
	if c.AuditKeep <= 0 {
		c.AuditKeep = DefaultAuditKeep
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if err := ValidateTokens(tokensOf(c)); err != nil {
		return c, err
	}
	if c.DefaultQueue != "" {
		if err := contract.ValidateName("Config.DefaultQueue", c.DefaultQueue); err != nil {
			return c, err
		}
	}
	return c, nil
}
