-- Priority pickup (docs/schedules.md, "Priorities"): a row's own priority
-- and a one-shot priority for its next attempt, both nullable small
-- integers where lower runs first; NULL means the kind's `priority:`. The
-- dispatcher claims level by level, each level one range of these indexes:
--   ... WHERE refresh_priority = ? AND refresh_at <= ? ORDER BY refresh_at
--   ... WHERE refresh_priority IS NULL AND refresh_at <= ? ORDER BY refresh_at
--   ... WHERE refresh_priority_once = ? AND refresh_at <= ? ORDER BY refresh_at
-- and finds the levels present by index lookups
-- (... WHERE refresh_priority > ? ORDER BY refresh_priority LIMIT 1).
-- refresh_priority_once is set on the few rows a user triggered: its index
-- leaves refresh_at out (they are sorted when claimed), so that moving
-- refresh_at, which every claim and result does, updates one index less.
-- The runner skips an index when the table already has one on exactly these
-- columns, whatever its name.
ALTER TABLE {{table}}
  ADD COLUMN `refresh_priority` SMALLINT NULL,
  ADD COLUMN `refresh_priority_once` SMALLINT NULL;
ALTER TABLE {{table}}
  ADD INDEX `idx_refresh_priority` (`refresh_priority`, `refresh_at`),
  ADD INDEX `idx_refresh_priority_once` (`refresh_priority_once`);
