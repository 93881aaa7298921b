package main

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCheckVersion(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, version, err string }{
		{"MariaDB", "10.11.19-MariaDB-0+deb12u1", ""},
		{"MariaDB", "10.6.0-MariaDB", ""},
		{"MariaDB", "11.0.1-MariaDB", ""},
		{"MariaDB", "10.5.23-MariaDB", "MariaDB 10.5.23-MariaDB is too old: the tests need MariaDB 10.6 or later"},
		{"MySQL", "8.0.1", ""},
		{"MySQL", "8.4.3", ""},
		{"MySQL", "8.0.0-dmr", "MySQL 8.0.0-dmr is too old: the tests need MySQL 8.0.1 or later"},
		{"MySQL", "5.7.44", "MySQL 5.7.44 is too old: the tests need MySQL 8.0.1 or later"},
		{"Redis", "6.2.0", ""},
		{"Redis", "7.0.15", ""},
		{"Redis", "6.0.16", "Redis 6.0.16 is too old: the tests need Redis 6.2 or later"},
		{"PostgreSQL", "15.20 (Debian 15.20-0+deb12u1)", ""},
		{"PostgreSQL", "13.0", ""},
		{"PostgreSQL", "12.22", "PostgreSQL 12.22 is too old: the tests need PostgreSQL 13 or later"},
	} {
		err := checkVersion(tt.name, tt.version)
		if tt.err == "" {
			require.NoError(t, err, tt.version)
			continue
		}
		require.EqualError(t, err, tt.err)
		var pe *probeError
		require.True(t, errors.As(err, &pe))
		require.Equal(t, exitTooOld, pe.code)
	}
}
