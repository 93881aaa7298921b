-- The alerts by priority (docs/operating.md, "Alerts"): the highest
-- refresh_attempt_no of each priority level, one index lookup per level
-- (... WHERE refresh_priority = ? ORDER BY refresh_attempt_no DESC LIMIT 1,
-- and the same with refresh_priority IS NULL for the kind's level) instead
-- of a scan of the level's rows. The oldest due row of a level needs no new
-- index: it is the first entry of its range of idx_refresh_priority.
-- The runner skips the index when the table already has one on exactly
-- these columns, whatever its name.
ALTER TABLE {{table}}
  ADD INDEX `idx_refresh_priority_attempt` (`refresh_priority`, `refresh_attempt_no`);
