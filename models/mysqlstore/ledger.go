package mysqlstore

import (
	"context"
	"database/sql"

	"github.com/refresher/refresher/models"
	"github.com/refresher/refresher/policy"
)

var (
	_ models.LedgerStore = (*Store)(nil)
	_ models.LedgerTx    = (*Tx)(nil)
)

// newLedger is the Store's ledger (models.LedgerTable) on db; see
// models.SQLLedgerStore.
func newLedger(db *sql.DB) models.SQLLedgerStore {
	return models.SQLLedgerStore{L: models.SQLLedger{DB: db, Quoted: "`" + models.LedgerTable + "`"}}
}

// AppendLedger implements models.LedgerTx: the entries commit or roll back
// with the transaction's rows.
func (tx *Tx) AppendLedger(ctx context.Context, entries []policy.Entry) error {
	return tx.s.L.Append(ctx, tx.tx, entries)
}

// LedgerDDL creates the ledger: binary collation, so that keys compare
// exactly as the application's key column returned them; 64 and 255
// characters hold a kind's name and models.LedgerKey.
func (dialect) LedgerDDL() []string {
	return []string{"CREATE TABLE IF NOT EXISTS `" + models.LedgerTable + "` (\n" +
		"  `id` BIGINT NOT NULL AUTO_INCREMENT,\n" +
		"  `kind` VARCHAR(64) NOT NULL,\n" +
		"  `row_key` VARCHAR(255) NOT NULL,\n" +
		"  `at_us` BIGINT NOT NULL,\n" +
		"  `event` VARCHAR(32) NOT NULL,\n" +
		"  `detail` TEXT NULL,\n" +
		"  PRIMARY KEY (`id`),\n" +
		"  KEY `idx_refresher_ledger_row` (`kind`, `row_key`, `at_us`)\n" +
		") CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"}
}
