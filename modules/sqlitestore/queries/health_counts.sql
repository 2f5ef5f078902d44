SELECT coalesce(sum(state = 'queued'), 0), coalesce(sum(state = 'leased'), 0), coalesce(sum(state = 'dead'), 0),
       coalesce(sum(state = 'waiting'), 0), coalesce(sum(state = 'cancelled'), 0) FROM adk_work
