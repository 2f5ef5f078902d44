SELECT tenant, served FROM adk_turns WHERE queue = ? AND served > 0
