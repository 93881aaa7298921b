package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// mysqlStatusNames are the server's counters --mysql-stats prints per
// model: statements by type, handler and InnoDB row operations, redo
// written and syncs. They are the whole server's (other users included),
// read with SHOW GLOBAL STATUS before and after a run, so that the
// service's statements can be set against the baseline's without
// performance_schema, which MariaDB only enables at startup.
var mysqlStatusNames = []string{
	"Questions", "Com_select", "Com_update", "Com_insert", "Com_delete", "Com_commit", "Com_begin", "Com_rollback",
	"Com_stmt_prepare", "Com_stmt_execute", "Com_stmt_close",
	"Handler_read_key", "Handler_read_next", "Handler_read_rnd_next", "Handler_update", "Handler_write",
	"Innodb_rows_read", "Innodb_rows_updated", "Innodb_buffer_pool_read_requests", "Innodb_buffer_pool_write_requests",
	"Innodb_os_log_written", "Innodb_data_fsyncs", "Innodb_pages_written", "Bytes_received", "Bytes_sent",
}

// readMySQLStatus reads mysqlStatusNames with --mysql-stats on MariaDB
// (nil otherwise).
func (e *env) readMySQLStatus(ctx context.Context) map[string]int64 {
	s, ok := e.st.(*mysqlStore)
	if !ok || !e.o.mysqlStats {
		return nil
	}
	rows, err := s.db.QueryContext(ctx, "SHOW GLOBAL STATUS WHERE Variable_name IN ('"+strings.Join(mysqlStatusNames, "','")+"')")
	if err != nil {
		return nil
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var name, value string
		if rows.Scan(&name, &value) == nil {
			if v, err := strconv.ParseInt(value, 10, 64); err == nil {
				out[strings.ToLower(name)] = v
			}
		}
	}
	return out
}

// printMySQLDelta prints the counters' change since before, per model.
func (e *env) printMySQLDelta(ctx context.Context, before map[string]int64, models int64) {
	if before == nil || models <= 0 {
		return
	}
	after := e.readMySQLStatus(ctx)
	var parts []string
	for _, name := range mysqlStatusNames {
		k := strings.ToLower(name)
		if d := after[k] - before[k]; d != 0 {
			parts = append(parts, fmt.Sprintf("%s %.3g", k, float64(d)/float64(models)))
		}
	}
	fmt.Printf("    mariadb per model: %s\n", strings.Join(parts, ", "))
}
