-- The README's quick start without Docker: an example application database
-- `app` with one table, `big_tables`, as a team has it before it adopts
-- refresher, and two rows that are due now (refresh_at = UTC_TIMESTAMP(6)).
-- The URLs point at the service's own HTTP listener (http: 127.0.0.1:9090
-- in refresher.yml), so the example works on a machine without internet:
-- /healthz answers 200, /exports/missing.csv answers 404.
-- Run it again to start over: it puts the two example rows back as new.
CREATE DATABASE IF NOT EXISTS app CHARACTER SET utf8mb4;
USE app;

CREATE TABLE IF NOT EXISTS big_tables (
  id         BIGINT        NOT NULL AUTO_INCREMENT PRIMARY KEY,
  uid        CHAR(20)      NOT NULL,
  name       VARCHAR(255)  NOT NULL,
  input_url  VARCHAR(2048) NOT NULL,
  refresh_at DATETIME(6)   NULL,
  UNIQUE KEY big_tables_uid (uid)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

DELETE FROM big_tables WHERE uid IN ('good', 'broken');
INSERT INTO big_tables (uid, name, input_url, refresh_at) VALUES
  ('good', 'Health report', 'http://127.0.0.1:9090/healthz', UTC_TIMESTAMP(6)),
  ('broken', 'Sales export', 'http://127.0.0.1:9090/exports/missing.csv', UTC_TIMESTAMP(6));
