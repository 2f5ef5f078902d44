// Package backing opens one of the kit's backings — the in-memory store,
// Redis or PostgreSQL — from DSNs, the way every command of the kit does:
// adk-dashboard (and so `make demo`) and adkctl. It sits above the
// backings and below the commands, so that a command gets the queue, its
// inspector and the state store over one connection, with the server's
// checks run, from two environment variables:
//
//	cfg := backing.FromEnv(os.Getenv) // ADK_REDIS_DSN or ADK_POSTGRES_DSN; neither: memory
//	b, err := backing.Open(ctx, cfg)
//	if err != nil {
//		return err // names the host and the cause, never the password
//	}
//	defer b.Close()
//	if b.Verdict != nil {
//		// the server failed Preflight (Redis) or Verify (PostgreSQL)
//	}
//
// Commands that take flags register the same ones everywhere with
// [Config.RegisterFlags] and then call [Config.FillFromEnv]; a DSN given
// as a flag wins over the environment.
//
// DSNs are [contract.Secret] values from start to end: errors name the
// host (host:port) and the driver's reason with the DSN and its password
// removed.
//
// A program that embeds the kit builds its stores itself, with its own
// pool sizes and client options (see redisstore.Open and
// pgstore.OpenQueue); this package is for tools that only know a DSN.
package backing
