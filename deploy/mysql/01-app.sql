-- The example application of docker-compose.yml: the database `app` with one
-- table, `big_tables`, as a team has it before it adopts refresher. The mysql
-- image runs this file once, when it starts on an empty data volume
-- (`docker compose down -v` starts over).
--
-- `refresher migrate` then adds the other refresh_* columns and the index on
-- refresh_at (SPEC section 2). refresh_at is created here already because it
-- is the one column the application itself writes: a new row is due at once
-- (refresh_at = UTC_TIMESTAMP(6)), so `docker compose up` shows the whole loop.
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

-- One URL that works and one whose host does not exist (.invalid never
-- resolves): the first is refreshed every 5 minutes, the second ends disabled
-- with "Provided URL is invalid: https://data.example.invalid/sales.csv".
INSERT INTO big_tables (uid, name, input_url, refresh_at) VALUES
  ('cvexample00000000001', 'Example page', 'https://example.com/', UTC_TIMESTAMP(6)),
  ('cvexample00000000002', 'Broken link', 'https://data.example.invalid/sales.csv', UTC_TIMESTAMP(6));
