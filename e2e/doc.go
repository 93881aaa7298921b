// Package e2e holds tests of the whole loop: the real service (package
// refresher) and the real reference worker (package worker) on MariaDB and
// Redis, against a local HTTP server. It has no code of its own.
package e2e
