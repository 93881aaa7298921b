package mysqlstore

import (
	"context"
	"database/sql"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/refresher/refresher/internal/testenv"
	"github.com/refresher/refresher/models"
)

// Every transaction of the Store is READ COMMITTED, whatever the DSN asks:
// a row another connection commits during the transaction is seen by its
// next read (REPEATABLE READ would keep the first read's snapshot).
func TestTxIsReadCommitted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg, err := mysql.ParseDSN(testenv.MySQLDSN(t))
	must(t, err)
	// The server's default, asked for by name (MariaDB and MySQL 5.7 spell
	// it tx_isolation; MySQL 8 transaction_isolation).
	cfg.Params = map[string]string{isolationVariable(t, cfg): "'REPEATABLE-READ'"}
	db, err := Open(ctx, cfg.FormatDSN())
	must(t, err)
	t.Cleanup(func() { _ = db.Close() })
	exec(t, db, "CREATE TABLE seen (id INT PRIMARY KEY)")
	s := New(db)

	count := func(q interface {
		QueryRowContext(context.Context, string, ...any) *sql.Row
	}) int {
		var n int
		must(t, q.QueryRowContext(ctx, "SELECT COUNT(*) FROM seen").Scan(&n))
		return n
	}
	insert := func(id int) {
		t.Helper()
		// Another connection of the pool: the transaction holds its own.
		exec(t, db, "INSERT INTO seen VALUES (?)", id)
	}

	must(t, s.Tx(ctx, func(mt models.Tx) error {
		tx := mt.(*Tx).tx
		before := count(tx)
		insert(1)
		eq(t, count(tx), before+1)
		return nil
	}))
	must(t, s.readOnly(ctx, func(tx *Tx) error {
		before := count(tx.tx)
		insert(2)
		eq(t, count(tx.tx), before+1)
		return nil
	}))
}

// A transaction of the Store costs START TRANSACTION and COMMIT, without a
// SET TRANSACTION ISOLATION LEVEL round trip of its own.
func TestTxSendsNoSetTransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testDB(t)
	db.SetMaxOpenConns(1) // both transactions on the one session counted
	s := New(db)
	status := func(tx *sql.Tx) (setOption, begin int) {
		rows, err := tx.QueryContext(ctx, "SHOW SESSION STATUS WHERE Variable_name IN ('Com_set_option', 'Com_begin')")
		must(t, err)
		defer rows.Close()
		for rows.Next() {
			var name string
			var v int
			must(t, rows.Scan(&name, &v))
			if name == "Com_set_option" {
				setOption = v
			} else {
				begin = v
			}
		}
		must(t, rows.Err())
		return setOption, begin
	}
	var set1, begin1, set2, begin2 int
	must(t, s.Tx(ctx, func(mt models.Tx) error {
		set1, begin1 = status(mt.(*Tx).tx)
		return nil
	}))
	must(t, s.Tx(ctx, func(mt models.Tx) error {
		set2, begin2 = status(mt.(*Tx).tx)
		return nil
	}))
	eq(t, begin2-begin1, 1)
	eq(t, set2-set1, 0)
}

// isolationVariable is the name of the server's isolation level variable.
func isolationVariable(t *testing.T, cfg *mysql.Config) string {
	t.Helper()
	db, err := sql.Open("mysql", cfg.FormatDSN())
	must(t, err)
	defer db.Close()
	var v string
	if db.QueryRow("SELECT @@transaction_isolation").Scan(&v) == nil {
		return "transaction_isolation"
	}
	return "tx_isolation"
}
