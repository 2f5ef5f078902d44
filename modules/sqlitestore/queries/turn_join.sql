-- A tenant gets an item due at ?4, of a priority other than 0 when ?5 is
-- 1: one that held no queued item joins the rotation at the back (stamp
-- ?3) with a new turn (credit 0); one already in it keeps its place and
-- wakes no later than the new item falls due. ranked stays 1 until the
-- tenant holds no queued item. It sleeps while its wake time is after ?6,
-- now (see adk_turns in the schema).
INSERT INTO adk_turns (queue, tenant, stamp, wake_at, ranked, asleep) VALUES (?1, ?2, ?3, ?4, ?5, ?4 > ?6)
ON CONFLICT (queue, tenant) DO UPDATE SET
    stamp   = CASE WHEN wake_at IS NULL THEN excluded.stamp ELSE stamp END,
    credit  = CASE WHEN wake_at IS NULL THEN 0 ELSE credit END,
    ranked  = CASE WHEN wake_at IS NULL THEN excluded.ranked ELSE max(ranked, excluded.ranked) END,
    wake_at = CASE WHEN wake_at IS NULL OR excluded.wake_at < wake_at THEN excluded.wake_at ELSE wake_at END,
    asleep  = excluded.asleep AND (wake_at IS NULL OR wake_at > ?6)
