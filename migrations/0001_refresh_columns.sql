-- The refresh columns of the README's "The columns", added to one kind's
-- table. It must agree with models.Schema, which a test checks
-- (go test ./migrations -run TestRefreshColumnsMatchSchema -update rewrites
-- it). An applied migration is never changed: a new column is a new file.
--
-- {{table}} is replaced by the kind's quoted table name. The runner
-- (refresher migrate) adds only the columns that do not exist yet, in one
-- ALTER TABLE statement, so this migration also succeeds on a table whose
-- application already created some or all of them (models.Refresh).
-- All DATETIME columns hold UTC.
ALTER TABLE {{table}}
  ADD COLUMN `refresh_at` DATETIME(6) NULL,
  ADD COLUMN `refresh_attempt_uid` CHAR(20) NULL,
  ADD COLUMN `refresh_attempt_at` DATETIME(6) NULL,
  ADD COLUMN `refresh_attempt_no` INT NOT NULL DEFAULT 0,
  ADD COLUMN `refresh_timeout_at` DATETIME(6) NULL,
  ADD COLUMN `refresh_disabled_until_update` DATETIME(6) NULL,
  ADD COLUMN `refresh_disabled_user_friendly_reason` VARCHAR(1024) NULL,
  ADD COLUMN `refresh_rrule` TEXT NULL,
  ADD COLUMN `refresh_failing_since` DATETIME(6) NULL,
  ADD COLUMN `refresh_last_success_at` DATETIME(6) NULL,
  ADD COLUMN `refresh_last_error` VARCHAR(1024) NULL,
  ADD COLUMN `refresh_status` VARCHAR(255) NULL;
