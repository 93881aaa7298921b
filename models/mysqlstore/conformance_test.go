package mysqlstore

import (
	"context"
	"testing"

	"github.com/refresher/refresher/models/storetest"
)

// TestConformance runs the drivers' shared suite on a fresh database per
// test.
func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		New: func(t *testing.T) storetest.Env {
			db := testDB(t)
			return storetest.Env{
				Store: New(db),
				Exec:  func(t *testing.T, sql string) { exec(t, db, sql) },
				CreateItemsTable: func(t *testing.T, name string, key storetest.KeyType) {
					typ := "VARCHAR(64)"
					switch key {
					case storetest.KeyInt:
						typ = "BIGINT"
					case storetest.KeyNarrow:
						typ = "VARCHAR(64) CHARACTER SET latin1"
					}
					exec(t, db, "CREATE TABLE "+name+" (id BIGINT AUTO_INCREMENT PRIMARY KEY, k "+typ+" NULL, "+
						"input_url VARCHAR(255) NULL, size INT NULL, UNIQUE KEY (k)) DEFAULT CHARSET=utf8mb4")
				},
			}
		},
		ZeroDate: func(t *testing.T, env storetest.Env, table, key string) {
			store := env.Store.(*Store)
			conn, err := store.DB().Conn(context.Background()) // one session with a lax SQL mode
			must(t, err)
			defer conn.Close()
			_, err = conn.ExecContext(context.Background(), "SET SESSION sql_mode = ''")
			must(t, err)
			_, err = conn.ExecContext(context.Background(), "INSERT INTO "+table+" (k, refresh_at) VALUES ('"+key+"', '0000-00-00 00:00:00')")
			must(t, err)
		},
	})
}
