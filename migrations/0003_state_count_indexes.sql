-- The indexes behind the operator's counts by state (GET /api/v1/kinds and
-- the gauges; see docs/operating.md), so that counting a table of
-- a million rows reads only the rows in each state, not the whole table:
--   running:  refresh_attempt_uid IS NOT NULL
--   failing:  refresh_failing_since IS NOT NULL, less the disabled ones
--             (which the second index answers on its own)
--   disabled: refresh_disabled_until_update IS NOT NULL
--   highest refresh_attempt_no: the last entry of its index
-- The runner skips an index when the table already has one on exactly these
-- columns, whatever its name.
ALTER TABLE {{table}}
  ADD INDEX `idx_refresh_attempt_uid` (`refresh_attempt_uid`),
  ADD INDEX `idx_refresh_disabled` (`refresh_disabled_until_update`, `refresh_failing_since`),
  ADD INDEX `idx_refresh_failing_since` (`refresh_failing_since`),
  ADD INDEX `idx_refresh_attempt_no` (`refresh_attempt_no`);
