package mysqlstore

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
)

// setReadCommitted makes READ COMMITTED the isolation level of every later
// transaction of a session. The statement is the same on MySQL 5.7 and 8
// and on every MariaDB, where the system variable it sets is not:
// tx_isolation on MariaDB before 11.1 and MySQL before 8.0, and
// transaction_isolation on MySQL 8.0.3 and later, which has no tx_isolation
// (so neither name works as a DSN parameter on both).
const setReadCommitted = "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED"

// readCommitted is a connector whose connections are READ COMMITTED from
// the start (Store.Tx explains why the service needs it). Setting it once
// per connection, not in each BeginTx, saves a round trip per transaction:
// go-sql-driver sends a transaction's isolation level as its own SET
// TRANSACTION statement before START TRANSACTION.
//
// It runs after the driver's own session setup, so it wins over an
// isolation level the DSN's parameters set.
type readCommitted struct{ driver.Connector }

// Connect opens a connection of the wrapped connector and sets its
// isolation level; the connection is closed if that fails.
func (c readCommitted) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	ex, ok := conn.(driver.ExecerContext)
	if !ok {
		_ = conn.Close()
		return nil, errors.New("the MySQL driver's connection cannot execute statements")
	}
	if _, err := ex.ExecContext(ctx, setReadCommitted, nil); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("set READ COMMITTED: %w", err)
	}
	return conn, nil
}
