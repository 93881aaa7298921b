//go:build unix

package sqlitestore

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// lockFile takes an exclusive flock on path (creating it), without
// waiting, and returns the function that releases it. The lock belongs to
// the open file: a second lockFile on the same path fails, in this process
// as in another, and the kernel releases it when the process ends, however
// it ends. The file stays; it is empty.
func lockFile(path string) (unlock func() error, err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create lock file %s: %w", path, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("another refresher is using this SQLite database (it holds %s): a SQLite database serves one refresher instance; stop the other one, or use MySQL or PostgreSQL to run several", path)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return f.Close, nil // closing the file releases the lock
}
