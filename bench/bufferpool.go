package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// parseBytes reads a size such as "3G", "512M", "64k" or "3221225472"
// (binary units, as MariaDB's own option syntax).
func parseBytes(s string) (int64, error) {
	t := strings.TrimSpace(strings.ToUpper(s))
	t = strings.TrimSuffix(t, "B")
	shift := 0
	if t != "" {
		switch t[len(t)-1] {
		case 'K':
			shift = 10
		case 'M':
			shift = 20
		case 'G':
			shift = 30
		case 'T':
			shift = 40
		}
	}
	if shift > 0 {
		t = t[:len(t)-1]
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n <= 0 || n > (1<<62)>>shift {
		return 0, fmt.Errorf("%q is not a size (e.g. 3G, 512M)", s)
	}
	return n << shift, nil
}

// bufferPoolResizeWait bounds the wait for an online resize of InnoDB's
// buffer pool (it moves pages chunk by chunk; 3 GB took seconds here).
const bufferPoolResizeWait = 10 * time.Minute

// setBufferPool sets MariaDB's innodb_buffer_pool_size to size online
// (SET GLOBAL; the server rounds it up to whole chunks) and waits until the
// resize is done. It returns the size it replaced: pass it to setBufferPool
// again to restore it. The setting is the whole server's, for every user
// of it, until restored.
func (s *mysqlStore) setBufferPool(ctx context.Context, size int64) (previous int64, err error) {
	if err := s.db.QueryRowContext(ctx, "SELECT @@innodb_buffer_pool_size").Scan(&previous); err != nil {
		return 0, fmt.Errorf("read innodb_buffer_pool_size: %w", err)
	}
	if _, err := s.db.ExecContext(ctx, "SET GLOBAL innodb_buffer_pool_size = ?", size); err != nil {
		return previous, fmt.Errorf("set innodb_buffer_pool_size: %w", err)
	}
	deadline := time.Now().Add(bufferPoolResizeWait)
	for {
		// Done once the variable holds the new size (rounded up to a chunk)
		// and the status no longer reports a resize in progress.
		var now int64
		var name, status string
		if err := s.db.QueryRowContext(ctx, "SELECT @@innodb_buffer_pool_size").Scan(&now); err != nil {
			return previous, fmt.Errorf("read innodb_buffer_pool_size: %w", err)
		}
		if err := s.db.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_resize_status'").Scan(&name, &status); err != nil {
			return previous, fmt.Errorf("read Innodb_buffer_pool_resize_status: %w", err)
		}
		if now >= size && resizeDone(status) {
			return previous, nil
		}
		if time.Now().After(deadline) {
			return previous, fmt.Errorf("buffer pool resize to %d MB not done after %s: %q", size>>20, bufferPoolResizeWait, status)
		}
		select {
		case <-ctx.Done():
			return previous, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// resizeDone reports whether Innodb_buffer_pool_resize_status says no
// resize is under way: empty (none since the start), "Completed resizing
// buffer pool at ..." or "Size did not change ...".
func resizeDone(status string) bool {
	return status == "" || strings.HasPrefix(status, "Completed") || strings.HasPrefix(status, "Size did not change")
}

// withBufferPool runs f with the server's buffer pool set to o.bufferPool
// (--buffer-pool) and puts the previous size back afterwards, also when f
// fails or the run is interrupted (ctx cancelled). Without --buffer-pool
// it runs f on the server as configured. Only MariaDB/MySQL can resize
// online; PostgreSQL's shared_buffers needs a restart, so --buffer-pool is
// refused there.
func (e *env) withBufferPool(ctx context.Context, f func() error) error {
	if e.o.bufferPool == "" {
		return f()
	}
	size, err := parseBytes(e.o.bufferPool)
	if err != nil {
		return fmt.Errorf("--buffer-pool: %w", err)
	}
	s, ok := e.st.(*mysqlStore)
	if !ok {
		return fmt.Errorf("--buffer-pool: only --store mysql resizes its buffer pool online (PostgreSQL's shared_buffers needs a server restart; it reads through the OS's page cache, so run it as configured)")
	}
	previous, err := s.setBufferPool(ctx, size)
	defer func() {
		// A fresh context: ctx may be what was cancelled.
		rctx, cancel := context.WithTimeout(context.Background(), bufferPoolResizeWait)
		defer cancel()
		if previous == 0 {
			return
		}
		if _, rerr := s.setBufferPool(rctx, previous); rerr != nil {
			fmt.Printf("warning: could not restore innodb_buffer_pool_size to %d MB: %v\n", previous>>20, rerr)
			return
		}
		fmt.Printf("innodb_buffer_pool_size restored to %d MB\n", previous>>20)
	}()
	if err != nil {
		return fmt.Errorf("--buffer-pool: %w", err)
	}
	fmt.Printf("--buffer-pool: SET GLOBAL innodb_buffer_pool_size = %d (online), was %d MB, restored at the end: %s\n\n", size, previous>>20, e.st.describe(ctx))
	return f()
}
