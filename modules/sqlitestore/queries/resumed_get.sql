-- How a leased item's last wait ended, for the lease a claim or a
-- heartbeat returns when its resumed_at is not 0.
SELECT resumed_signal, resumed_payload, resumed_timed_out FROM adk_work WHERE queue = ?1 AND tenant = ?2 AND id = ?3
