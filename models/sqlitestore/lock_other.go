//go:build !unix

package sqlitestore

// lockFile does nothing where flock is not available: run one refresher
// per SQLite database there.
func lockFile(path string) (unlock func() error, err error) {
	return func() error { return nil }, nil
}
