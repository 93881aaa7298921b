-- The index the dispatcher's claim query walks:
--   SELECT ... WHERE refresh_at <= ? ORDER BY refresh_at LIMIT n FOR UPDATE SKIP LOCKED
-- and NextDue's MIN(refresh_at). The runner skips it when the table already
-- has an index on exactly (refresh_at), whatever its name.
ALTER TABLE {{table}}
  ADD INDEX `idx_refresh_at` (`refresh_at`);
